// ONNX elementwise ops: arithmetic with broadcasting, activations, Identity/Dropout, Cast,
// comparisons, logic, Where, IsNaN and IsInf (booleans are i32 0 or 1 on the device). Each is folded on the host
// where its inputs are known at load time (shape arithmetic).
#include <cstdio>
#include <limits>
#include <string>
#include <utility>

#include "gpu/models/onnx/onnx_fold.h"
#include "gpu/models/onnx/onnx_host.h"
#include "gpu/models/onnx/onnx_op_table.h"
#include "gpu/ops/cast.h"
#include "gpu/ops/elementwise.h"
#include "gpu/ops/elementwise_basic.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/unary.h"

namespace recon::gpu::onnx::ops_builders {
namespace {

// Opsets 1-6 of the arithmetic ops broadcast only with `broadcast` = 1, B's dims lying along A's
// from `axis` on (without `axis`: as A's last dims, which is numpy's alignment). B reshaped with
// trailing ones up to A's rank then broadcasts the same way under numpy's rule. Without
// `broadcast` the two shapes must be equal.
Result<Arg> legacy_operand_b(OpContext& ctx, const Arg& a, const Arg& b) {
  if (ctx.attr_int("broadcast", 0) == 0) {
    if (a.shape() == b.shape()) return b;
    return ctx.fail("shapes " + shape_string(a.shape()) + " and " + shape_string(b.shape()) + " differ, and opset " +
                    std::to_string(ctx.opset()) + " broadcasts only where the node says broadcast = 1");
  }
  if (!ctx.has_attr("axis")) return b;
  const auto rank_a = static_cast<int64_t>(a.shape().size()), rank_b = static_cast<int64_t>(b.shape().size());
  int64_t axis = ctx.attr_int("axis", 0);
  if (axis < 0) axis += rank_a;
  if (axis < 0 || axis + rank_b > rank_a) {
    return ctx.fail("broadcast axis " + std::to_string(ctx.attr_int("axis", 0)) + " does not fit B " +
                    shape_string(b.shape()) + " along A " + shape_string(a.shape()));
  }
  Shape aligned = b.shape();
  aligned.resize(static_cast<size_t>(rank_a - axis), 1);
  return gpu::ops::reshape_view(b, aligned);
}

// PRelu before opset 7 takes one slope or one per channel (axis 1), as Caffe2 and PyTorch's
// exporter meant it; from 7 on the slope broadcasts as numpy does.
Result<Arg> legacy_prelu_slope(const Arg& x, const Arg& slope) {
  if (slope.shape().size() != 1 || x.shape().size() < 2 || slope.shape()[0] != x.shape()[1]) return slope;
  Shape per_channel(x.shape().size() - 1, 1);
  per_channel[0] = slope.shape()[0];
  return gpu::ops::reshape_view(slope, per_channel);
}

// Operands i and j of an op on the device: both floating (as the execution dtype), or, where the op
// has an integer form (`ints`), both integers or both booleans (as i32).
Result<std::pair<Arg, Arg>> arithmetic_operands(OpContext& ctx, size_t i, size_t j, bool ints) {
  const bool int_i = !is_floating(ctx.input(i).type), int_j = !is_floating(ctx.input(j).type);
  if (!ints || (!int_i && !int_j)) {
    RECON_ASSIGN_OR_RETURN(Arg a, ctx.float_input(i));
    RECON_ASSIGN_OR_RETURN(Arg b, ctx.float_input(j));
    return std::pair{a, b};
  }
  if (int_i != int_j) return ctx.fail("an integer and a floating operand");
  RECON_ASSIGN_OR_RETURN(Arg a, ctx.device_input(i));
  RECON_ASSIGN_OR_RETURN(Arg b, ctx.device_input(j));
  if (a.dtype() != DType::kI32 || b.dtype() != DType::kI32) {
    return ctx.fail(std::string("integers of type ") + elem_type_name(ctx.input(i).type) + " on the device");
  }
  return std::pair{a, b};
}

// in (a float or i32) converted into `out` of integer type `type`: truncated, and wrapped into a
// narrow type's range.
Status to_integer(OpContext& ctx, const Arg& in, const Arg& out, ElemType type) {
  if (const int bits = narrow_int_bits(type); bits != 0) {
    return gpu::ops::wrap_int(ctx.graph(), in, out, bits, type == ElemType::kInt8 || type == ElemType::kInt16);
  }
  return gpu::ops::cast(ctx.graph(), in, out);
}

// int8, uint8, int16 and uint16 are i32 words on the device: after an op whose result can leave the
// type's range (Add, Sub, Mul, Div's −128 / −1, Sum), `out` wraps back into it as NumPy's does.
// Comparisons, Max, Min, Mod, Clip and Where stay in range by themselves.
Status wrap_to_type(OpContext& ctx, const Arg& out, ElemType type) {
  return narrow_int_bits(type) == 0 ? Status::ok() : to_integer(ctx, out, out, type);
}

bool may_overflow(gpu::ops::BinaryOp op) {
  return op == gpu::ops::BinaryOp::kAdd || op == gpu::ops::BinaryOp::kSub || op == gpu::ops::BinaryOp::kMul ||
         op == gpu::ops::BinaryOp::kDiv;
}

// Add to Min, the comparisons, logic and remainders; not Pow or PRelu.
bool has_integer_form(gpu::ops::BinaryOp op) {
  return op <= gpu::ops::BinaryOp::kMin || op >= gpu::ops::BinaryOp::kEqual;
}

Status binary_op(OpContext& ctx, FoldBinary fold, gpu::ops::BinaryOp op, bool may_fold = true) {
  const bool legacy = ctx.opset() < 7;
  // The host folds broadcast as numpy does; a legacy axis other than the last dims runs on the device.
  if (may_fold && !(legacy && ctx.has_attr("axis")) && ctx.all_inputs_on_host()) {
    Result<HostTensor> t = fold_binary(fold, *ctx.input(0).host, *ctx.input(1).host);
    if (!t) return ctx.fail(t.status().message());
    ctx.set_host_output(0, std::move(*t));
    return Status::ok();
  }
  RECON_ASSIGN_OR_RETURN(auto operands, arithmetic_operands(ctx, 0, 1, has_integer_form(op)));
  auto [a, b] = operands;
  if (legacy && op == gpu::ops::BinaryOp::kPRelu) {
    RECON_ASSIGN_OR_RETURN(b, legacy_prelu_slope(a, b));
  } else if (legacy) {
    RECON_ASSIGN_OR_RETURN(b, legacy_operand_b(ctx, a, b));
  }
  Result<Shape> shape = gpu::ops::broadcast_shape(a.shape(), b.shape());
  if (!shape) return ctx.fail(shape.status().message());
  RECON_ASSIGN_OR_RETURN(
      Arg out, ctx.new_output(
                   0, gpu::ops::is_comparison_op(op) || gpu::ops::is_logic_op(op) ? ElemType::kBool : ctx.input(0).type,
                   *shape));
  RECON_RETURN_IF_ERROR(gpu::ops::binary(ctx.graph(), op, a, b, out));
  return may_overflow(op) ? wrap_to_type(ctx, out, ctx.input(0).type) : Status::ok();
}

Status unary_op(OpContext& ctx, gpu::ops::UnaryOp op, float alpha = 1.0f, float beta = 0.0f, float gamma = 0.0f,
                float delta = 0.0f) {
  RECON_ASSIGN_OR_RETURN(Arg in, ctx.float_input(0));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, in.shape()));
  return gpu::ops::unary(ctx.graph(), op, in, out, alpha, beta, gamma, delta);
}

// Sum, Max, Min, Mean of any number of inputs with broadcasting, as a chain of binary ops (the
// last one writes the output; Mean then scales it).
Status variadic(OpContext& ctx, gpu::ops::BinaryOp op, bool mean = false) {
  if (ctx.input_count() == 0) return ctx.fail("no inputs");
  if (ctx.input_count() == 1) return ctx.set_view_output(0, 0, ctx.input(0).shape);
  const bool ints = !mean && has_integer_form(op);
  RECON_ASSIGN_OR_RETURN(auto first, arithmetic_operands(ctx, 0, 1, ints));
  Arg acc = first.first;
  Shape shape = acc.shape();
  for (size_t i = 1; i < ctx.input_count(); ++i) {
    Result<Shape> s = gpu::ops::broadcast_shape(shape, ctx.input(i).shape);
    if (!s) return ctx.fail(s.status().message());
    shape = *s;
  }
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, shape));
  for (size_t i = 1; i < ctx.input_count(); ++i) {
    RECON_ASSIGN_OR_RETURN(auto pair, arithmetic_operands(ctx, 0, i, ints));
    const Arg next = pair.second;
    Result<Shape> s = gpu::ops::broadcast_shape(acc.shape(), next.shape());
    if (!s) return ctx.fail(s.status().message());
    Arg dst = out;  // the output doubles as the accumulator once partial results have its shape
    if (i + 1 < ctx.input_count() && *s != shape) {
      RECON_ASSIGN_OR_RETURN(dst, ctx.scratch(acc.dtype(), *s));
    }
    RECON_RETURN_IF_ERROR(gpu::ops::binary(ctx.graph(), op, acc, next, dst));
    acc = dst;
  }
  // Sum wraps once at the end: i32 words wrap modulo 2^32, so the low bits are already exact.
  if (!mean) return may_overflow(op) ? wrap_to_type(ctx, out, ctx.input(0).type) : Status::ok();
  return gpu::ops::scale_shift(ctx.graph(), out, out, 1.0f / static_cast<float>(ctx.input_count()), 0.0f);
}

}  // namespace

std::string check_none(const Node&, int64_t) {
  return {};
}

Status add(OpContext& ctx) {
  return binary_op(ctx, FoldBinary::kAdd, gpu::ops::BinaryOp::kAdd);
}
Status sub(OpContext& ctx) {
  return binary_op(ctx, FoldBinary::kSub, gpu::ops::BinaryOp::kSub);
}
Status mul(OpContext& ctx) {
  return binary_op(ctx, FoldBinary::kMul, gpu::ops::BinaryOp::kMul);
}
Status div(OpContext& ctx) {
  return binary_op(ctx, FoldBinary::kDiv, gpu::ops::BinaryOp::kDiv);
}
// Mod: fmod = 1 is C's fmod (the sign of the dividend), fmod = 0 Python's % (the sign of the
// divisor). ONNX asks floats for fmod = 1; fmod = 0 of floats runs as NumPy's mod, as the reference
// implementation does.
Status mod(OpContext& ctx) {
  const bool c_fmod = ctx.attr_int("fmod", 0) != 0;
  return binary_op(ctx, c_fmod ? FoldBinary::kFmod : FoldBinary::kMod,
                   c_fmod ? gpu::ops::BinaryOp::kFmod : gpu::ops::BinaryOp::kMod);
}
// BitShift of uint8 and uint16, i32 words on the device shifted as unsigned words, a left shift
// wrapped back into the type; uint32 and uint64 have no device dtype.
Status bit_shift(OpContext& ctx) {
  const std::string direction = ctx.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") return ctx.fail("direction must be LEFT or RIGHT");
  const ElemType type = ctx.input(0).type;
  if (type != ElemType::kUint8 && type != ElemType::kUint16) {
    return ctx.fail(std::string("BitShift of ") + elem_type_name(type) + "; recon shifts uint8 and uint16");
  }
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.device_input(0));
  RECON_ASSIGN_OR_RETURN(Arg y, ctx.device_input(1));
  Result<Shape> shape = gpu::ops::broadcast_shape(x.shape(), y.shape());
  if (!shape) return ctx.fail(shape.status().message());
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, type, *shape));
  const bool left = direction == "LEFT";
  RECON_RETURN_IF_ERROR(gpu::ops::binary(
      ctx.graph(), left ? gpu::ops::BinaryOp::kShiftLeft : gpu::ops::BinaryOp::kShiftRight, x, y, out));
  return left ? wrap_to_type(ctx, out, type) : Status::ok();
}
Status equal(OpContext& ctx) {
  return binary_op(ctx, FoldBinary::kEqual, gpu::ops::BinaryOp::kEqual);
}
Status less(OpContext& ctx) {
  return binary_op(ctx, FoldBinary::kLess, gpu::ops::BinaryOp::kLess);
}
Status greater(OpContext& ctx) {
  return binary_op(ctx, FoldBinary::kGreater, gpu::ops::BinaryOp::kGreater);
}
Status less_or_equal(OpContext& ctx) {
  return binary_op(ctx, FoldBinary::kLessOrEqual, gpu::ops::BinaryOp::kLessOrEqual);
}
Status greater_or_equal(OpContext& ctx) {
  return binary_op(ctx, FoldBinary::kGreaterOrEqual, gpu::ops::BinaryOp::kGreaterOrEqual);
}
Status logical_and(OpContext& ctx) {
  return binary_op(ctx, FoldBinary::kAnd, gpu::ops::BinaryOp::kAnd);
}
Status logical_or(OpContext& ctx) {
  return binary_op(ctx, FoldBinary::kOr, gpu::ops::BinaryOp::kOr);
}
Status logical_xor(OpContext& ctx) {
  return binary_op(ctx, FoldBinary::kXor, gpu::ops::BinaryOp::kXor);
}

Status logical_not(OpContext& ctx) {
  const Value& x = ctx.input(0);
  if (x.is_host()) {  // x xor true
    Result<HostTensor> all_true = make_tensor(ElemType::kBool, {}, std::vector<double>{1.0});
    if (!all_true) return ctx.fail(all_true.status().message());
    Result<HostTensor> t = fold_binary(FoldBinary::kXor, *x.host, *all_true);
    if (!t) return ctx.fail(t.status().message());
    ctx.set_host_output(0, std::move(*t));
    return Status::ok();
  }
  RECON_ASSIGN_OR_RETURN(Arg in, ctx.device_input(0));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ElemType::kBool, in.shape()));
  return gpu::ops::cast_to_bool(ctx.graph(), in, out, /*invert=*/true);
}

// Where: x where cond else y, the three broadcast together; x and y both floating or both
// integers (or booleans).
Status where(OpContext& ctx) {
  if (ctx.all_inputs_on_host()) {
    Result<HostTensor> t = fold_where(*ctx.input(0).host, *ctx.input(1).host, *ctx.input(2).host);
    if (!t) return ctx.fail(t.status().message());
    ctx.set_host_output(0, std::move(*t));
    return Status::ok();
  }
  if (ctx.input(0).type != ElemType::kBool) {
    return ctx.fail(std::string("the condition is ") + elem_type_name(ctx.input(0).type) + ", not bool");
  }
  RECON_ASSIGN_OR_RETURN(Arg cond, ctx.device_input(0));
  RECON_ASSIGN_OR_RETURN(auto operands, arithmetic_operands(ctx, 1, 2, /*ints=*/true));
  auto [x, y] = operands;
  Result<Shape> shape = gpu::ops::broadcast_shape(cond.shape(), x.shape());
  if (shape) shape = gpu::ops::broadcast_shape(*shape, y.shape());
  if (!shape) return ctx.fail(shape.status().message());
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(1).type, *shape));
  return gpu::ops::where(ctx.graph(), cond, x, y, out);
}

namespace {
// IsNaN and IsInf: which floats count (NaN, +inf, −inf) into bool; in an fp16 graph a value beyond
// fp16's range is already infinite.
Status float_class_op(OpContext& ctx, bool nan, bool positive_inf, bool negative_inf) {
  if (ctx.input(0).is_host()) {
    Result<HostTensor> t = fold_float_class(*ctx.input(0).host, nan, positive_inf, negative_inf);
    if (!t) return ctx.fail(t.status().message());
    ctx.set_host_output(0, std::move(*t));
    return Status::ok();
  }
  if (!is_floating(ctx.input(0).type)) {
    return ctx.fail(std::string("input of type ") + elem_type_name(ctx.input(0).type) + ", not a float");
  }
  RECON_ASSIGN_OR_RETURN(Arg in, ctx.float_input(0));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ElemType::kBool, in.shape()));
  if (nan) return gpu::ops::is_nan(ctx.graph(), in, out);
  return gpu::ops::is_inf(ctx.graph(), in, out, positive_inf, negative_inf);
}
}  // namespace

Status is_nan(OpContext& ctx) {
  return float_class_op(ctx, true, false, false);
}
Status is_inf(OpContext& ctx) {
  return float_class_op(ctx, false, ctx.attr_int("detect_positive", 1) != 0, ctx.attr_int("detect_negative", 1) != 0);
}

Status sum(OpContext& ctx) {
  return variadic(ctx, gpu::ops::BinaryOp::kAdd);
}
Status max(OpContext& ctx) {
  return variadic(ctx, gpu::ops::BinaryOp::kMax);
}
Status min(OpContext& ctx) {
  return variadic(ctx, gpu::ops::BinaryOp::kMin);
}
Status mean(OpContext& ctx) {
  return variadic(ctx, gpu::ops::BinaryOp::kAdd, true);
}

Status relu(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kRelu);
}
Status sigmoid(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kSigmoid);
}
Status tanh(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kTanh);
}
Status exp(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kExp);
}
Status neg(OpContext& ctx) {
  const Value& x = ctx.input(0);
  if (x.is_host()) {  // 0 − x: shape arithmetic (a negated axis) stays on the host, in its type
    Result<HostTensor> zero = make_tensor(x.type, {}, std::vector<double>{0.0});
    if (!zero) return ctx.fail(zero.status().message());
    Result<HostTensor> t = fold_binary(FoldBinary::kSub, *zero, *x.host);
    if (!t) return ctx.fail(t.status().message());
    ctx.set_host_output(0, std::move(*t));
    return Status::ok();
  }
  return unary_op(ctx, gpu::ops::UnaryOp::kIdentity, -1.0f, 0.0f);
}
Status erf(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kErf);
}
Status sqrt(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kSqrt);
}
Status reciprocal(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kReciprocal);
}
Status abs(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kAbs);
}
Status log(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kLog);
}
Status floor(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kFloor);
}
Status ceil(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kCeil);
}
Status sin(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kSin);
}
Status cos(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kCos);
}
Status sign(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kSign);
}
Status round(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kRound);
}
Status softplus(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kSoftplus);
}
Status softsign(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kSoftsign);
}
Status hard_swish(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kHardSwish);
}
Status leaky_relu(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kLeakyRelu, 1.0f, 0.0f, ctx.attr_float("alpha", 0.01f));
}
Status elu(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kElu, 1.0f, 0.0f, ctx.attr_float("alpha", 1.0f));
}
Status selu(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kSelu, 1.0f, 0.0f, ctx.attr_float("gamma", 1.05070102f),
                  ctx.attr_float("alpha", 1.67326319f));
}
Status thresholded_relu(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kThresholdedRelu, 1.0f, 0.0f, ctx.attr_float("alpha", 1.0f));
}
Status tan(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kTan);
}
Status asin(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kAsin);
}
Status acos(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kAcos);
}
Status atan(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kAtan);
}
Status sinh(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kSinh);
}
Status cosh(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kCosh);
}
Status asinh(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kAsinh);
}
Status acosh(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kAcosh);
}
Status atanh(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kAtanh);
}
Status celu(OpContext& ctx) {
  const float alpha = ctx.attr_float("alpha", 1.0f);
  if (alpha == 0.0f) return ctx.fail("alpha must not be 0");
  return unary_op(ctx, gpu::ops::UnaryOp::kCelu, 1.0f, 0.0f, alpha);
}
Status shrink(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kShrink, 1.0f, 0.0f, ctx.attr_float("lambd", 0.5f),
                  ctx.attr_float("bias", 0.0f));
}
Status hard_sigmoid(OpContext& ctx) {
  return unary_op(ctx, gpu::ops::UnaryOp::kClip, ctx.attr_float("alpha", 0.2f), ctx.attr_float("beta", 0.5f), 0.0f,
                  1.0f);
}

Status clip(OpContext& ctx) {
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (ctx.opset() < 11) {
    lo = ctx.attr_float("min", lo);
    hi = ctx.attr_float("max", hi);
  } else if ((ctx.has_input(1) && !ctx.input(1).is_host()) || (ctx.has_input(2) && !ctx.input(2).is_host()) ||
             !is_floating(ctx.input(0).type)) {
    // Bounds given at run time, or integers (i32 on the device, bounds too): max with the lower,
    // then min with the upper, on the device.
    const bool ints = !is_floating(ctx.input(0).type);
    RECON_ASSIGN_OR_RETURN(Arg x, ints ? ctx.device_input(0) : ctx.float_input(0));
    RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ctx.input(0).type, x.shape()));
    Arg cur = x;
    for (size_t i : {size_t{1}, size_t{2}}) {
      if (!ctx.has_input(i)) continue;
      RECON_ASSIGN_OR_RETURN(Arg bound, ints ? ctx.device_input(i) : ctx.float_input(i));
      if (bound.dtype() != x.dtype()) return ctx.fail("min and max must be of the input's type");
      if (bound.numel() != 1) return ctx.fail("min and max must be scalars");
      RECON_ASSIGN_OR_RETURN(Arg scalar, gpu::ops::reshape_view(bound, {1}));
      RECON_RETURN_IF_ERROR(gpu::ops::binary(ctx.graph(), i == 1 ? gpu::ops::BinaryOp::kMax : gpu::ops::BinaryOp::kMin,
                                             cur, scalar, out));
      cur = out;
    }
    if (!ctx.has_input(1) && !ctx.has_input(2)) return gpu::ops::copy(ctx.graph(), x, out);
    return Status::ok();
  } else {
    for (size_t i : {size_t{1}, size_t{2}}) {
      if (!ctx.has_input(i)) continue;
      RECON_ASSIGN_OR_RETURN(const HostTensor* t, ctx.host_input(i));
      RECON_ASSIGN_OR_RETURN(std::vector<double> v, host_doubles(*t));
      if (v.size() != 1) return ctx.fail("min and max must be scalars");
      (i == 1 ? lo : hi) = static_cast<float>(v[0]);
    }
  }
  return unary_op(ctx, gpu::ops::UnaryOp::kClip, 1.0f, 0.0f, lo, hi);
}

// Pow: a constant scalar exponent (x², x^0.5 in decomposed norms) takes the unary op, any other
// exponent (a tensor, broadcast) the binary one.
Status prelu(OpContext& ctx) {
  return binary_op(ctx, FoldBinary::kMul, gpu::ops::BinaryOp::kPRelu, /*may_fold=*/false);
}

namespace {

// Input i as a floating device tensor in the execution dtype: an integer one (i32 on the device) cast.
Result<Arg> float_operand(OpContext& ctx, size_t i) {
  if (is_floating(ctx.input(i).type)) return ctx.float_input(i);
  RECON_ASSIGN_OR_RETURN(const Arg v, ctx.device_input(i));
  if (v.dtype() != DType::kI32) {
    return ctx.fail(std::string("integers of type ") + elem_type_name(ctx.input(i).type) + " on the device");
  }
  RECON_ASSIGN_OR_RETURN(const Arg f, ctx.scratch(ctx.float_dtype(), v.shape()));
  RECON_RETURN_IF_ERROR(gpu::ops::cast(ctx.graph(), v, f));
  return f;
}

// Pow with an integer base or exponent (opset 12 on): computed in floats, exact while the powers
// stay below 2^24 (fp32; 2^11 in fp16); an integer base's result is rounded to the nearest integer
// (and wrapped into a narrow type's range).
Status integer_pow(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(const Arg x, float_operand(ctx, 0));
  RECON_ASSIGN_OR_RETURN(const Arg y, float_operand(ctx, 1));
  Result<Shape> shape = gpu::ops::broadcast_shape(x.shape(), y.shape());
  if (!shape) return ctx.fail(shape.status().message());
  RECON_ASSIGN_OR_RETURN(const Arg out, ctx.new_output(0, ctx.input(0).type, *shape));
  if (is_floating(ctx.input(0).type)) return gpu::ops::binary(ctx.graph(), gpu::ops::BinaryOp::kPow, x, y, out);
  RECON_ASSIGN_OR_RETURN(const Arg power, ctx.scratch(x.dtype(), *shape));
  RECON_ASSIGN_OR_RETURN(const Arg rounded, ctx.scratch(x.dtype(), *shape));
  RECON_RETURN_IF_ERROR(gpu::ops::binary(ctx.graph(), gpu::ops::BinaryOp::kPow, x, y, power));
  RECON_RETURN_IF_ERROR(gpu::ops::unary(ctx.graph(), gpu::ops::UnaryOp::kRound, power, rounded));
  return to_integer(ctx, rounded, out, ctx.input(0).type);
}

}  // namespace

Status pow(OpContext& ctx) {
  const Value& y = ctx.input(1);
  if (is_floating(ctx.input(0).type) && y.is_host() && y.host->numel() == 1) {
    RECON_ASSIGN_OR_RETURN(std::vector<double> v, host_doubles(*y.host));
    return unary_op(ctx, gpu::ops::UnaryOp::kPow, 1.0f, 0.0f, static_cast<float>(v[0]));
  }
  if (!is_floating(ctx.input(0).type) || !is_floating(y.type)) return integer_pow(ctx);
  return binary_op(ctx, FoldBinary::kMul, gpu::ops::BinaryOp::kPow, /*may_fold=*/false);
}

Status identity(OpContext& ctx) {
  return ctx.set_view_output(0, 0, ctx.input(0).shape);
}

// Dropout keeps every element in inference: the output is a view of the input and the mask
// (output 1) is all true, a constant. Training mode (input 2, opset 12 on; known when compiling: a
// constant or a shape tensor, as is the ratio) drops elements at random, which recon does not do,
// except at ratio 0, where it too keeps every element.
Status dropout(OpContext& ctx) {
  if (ctx.opset() >= 12 && ctx.has_input(2)) {
    RECON_ASSIGN_OR_RETURN(std::vector<int64_t> training, ctx.host_ints(2));
    double ratio = 0.5;
    if (ctx.has_input(1)) {
      RECON_ASSIGN_OR_RETURN(const HostTensor* r, ctx.host_input(1));
      RECON_ASSIGN_OR_RETURN(std::vector<double> rs, host_doubles(*r));
      if (rs.size() != 1) return ctx.fail("ratio must hold one value");
      ratio = rs[0];
    }
    if (!training.empty() && training[0] != 0 && ratio != 0.0) {
      char r[32];
      std::snprintf(r, sizeof r, "%g", ratio);
      return ctx.fail(std::string("training-mode Dropout (ratio ") + r +
                      ") drops elements at random, which recon does not do; only ratio 0 runs in training mode");
    }
  }
  RECON_RETURN_IF_ERROR(ctx.set_view_output(0, 0, ctx.input(0).shape));
  if (!ctx.wants_output(1)) return Status::ok();
  const int64_t n = shape_numel(ctx.input(0).shape);
  if (n > kMaxFoldElements) return ctx.fail("Dropout's mask of more than 2^26 elements");
  // Before opset 10 the mask has the input's type (ones); since then it is bool.
  const ElemType mask_type = ctx.opset() < 10 ? ctx.input(0).type : ElemType::kBool;
  Result<HostTensor> mask =
      make_tensor(mask_type, ctx.input(0).shape, std::vector<double>(static_cast<size_t>(n), 1.0));
  if (!mask) return ctx.fail(mask.status().message());
  ctx.set_host_output(1, std::move(*mask));
  return Status::ok();
}

namespace {

// Whether every value of integer (or bool) type `from` is one of `to`'s, where `to` is a narrow
// integer (int8 to int16: yes; int32 or uint8 to int8: no); any type fits a wider one.
bool fits_narrow(ElemType from, ElemType to) {
  const int to_bits = narrow_int_bits(to), from_bits = narrow_int_bits(from);
  if (to_bits == 0 || from == to || from == ElemType::kBool) return true;
  if (from_bits == 0) return false;
  const auto range = [](ElemType t, int bits) {
    const bool is_signed = t == ElemType::kInt8 || t == ElemType::kInt16;
    return is_signed ? std::pair<int64_t, int64_t>{-(int64_t{1} << (bits - 1)), (int64_t{1} << (bits - 1)) - 1}
                     : std::pair<int64_t, int64_t>{0, (int64_t{1} << bits) - 1};
  };
  const auto [from_lo, from_hi] = range(from, from_bits);
  const auto [to_lo, to_hi] = range(to, to_bits);
  return from_lo >= to_lo && from_hi <= to_hi;
}

// Input 0 as element type `to` (Cast, CastLike).
Status cast_to(OpContext& ctx, ElemType to) {
  const Value& in = ctx.input(0);
  if (in.is_host()) {
    Result<HostTensor> t = fold_cast(*in.host, to);
    if (!t) return ctx.fail(t.status().message());
    ctx.set_host_output(0, std::move(*t));
    return Status::ok();
  }
  // Floats share the execution dtype on the device, and integers and booleans run as i32: a cast
  // within the floats, between integers or from bool to an integer moves no bytes, unless the
  // target is a narrow integer the source's values may not fit (they wrap, as NumPy's astype does).
  const bool from_float = is_floating(in.type), to_float = is_floating(to);
  const bool from_int = device_dtype(in.type, DType::kF32) == DType::kI32;
  const bool to_int = device_dtype(to, DType::kF32) == DType::kI32;
  if ((from_float && to_float) ||
      (from_int && to_int && (to != ElemType::kBool || in.type == ElemType::kBool) && fits_narrow(in.type, to))) {
    RECON_RETURN_IF_ERROR(ctx.set_view_output(0, 0, in.shape));
    ctx.outputs()[0].type = to;
    return Status::ok();
  }
  if (!(from_float || from_int) || !(to_float || to_int)) {
    return ctx.fail(std::string("a cast from ") + elem_type_name(in.type) + " to " + elem_type_name(to) +
                    " on the device is not supported");
  }
  RECON_ASSIGN_OR_RETURN(Arg x, ctx.device_input(0));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, to, x.shape()));
  // To bool: non-zero (NaN too) is true; otherwise values convert (floats to integers truncating).
  if (to == ElemType::kBool) return gpu::ops::cast_to_bool(ctx.graph(), x, out);
  if (to_float) return gpu::ops::cast(ctx.graph(), x, out);
  return to_integer(ctx, x, out, to);
}

}  // namespace

Status cast(OpContext& ctx) {
  return cast_to(ctx, static_cast<ElemType>(ctx.attr_int("to", 0)));
}

Status cast_like(OpContext& ctx) {
  return cast_to(ctx, ctx.input(1).type);
}

}  // namespace recon::gpu::onnx::ops_builders
