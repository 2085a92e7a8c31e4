// ONNX quantization ops: QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear as elementwise
// passes; MatMulInteger and ConvInteger as float GEMMs and convolutions of the operands less their
// zero points over pieces of the sum short enough to stay exact in fp32 (below 2^24), the pieces
// added in i32; QLinearMatMul and QLinearConv as those integer products rescaled by a_scale · b_scale
// / y_scale and quantized. int8 and uint8 are i32 words on the device.
#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu/models/onnx/onnx_fold.h"
#include "gpu/models/onnx/onnx_host.h"
#include "gpu/models/onnx/onnx_op_table.h"
#include "gpu/ops/cast.h"
#include "gpu/ops/elementwise.h"
#include "gpu/ops/elementwise_basic.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/reduce.h"
#include "gpu/ops/unary.h"

namespace recon::gpu::onnx::ops_builders {
namespace {

// The largest |q − zero point| of int8 and uint8 operands (127 − (−128), 255 − 0), and the longest
// sum of such products that fp32 still holds exactly: K · 255² < 2^24.
constexpr int64_t kMaxQuantDiff = 255;
constexpr int64_t kMaxExactTerms = (int64_t{1} << 24) / (kMaxQuantDiff * kMaxQuantDiff);

bool is_8bit(ElemType t) {
  return t == ElemType::kUint8 || t == ElemType::kInt8;
}

// Which of a per-axis parameter's values element i (row-major) of a tensor takes; all take the
// first where the parameter has one value.
struct AxisIndex {
  size_t inner = 1, len = 1;
  size_t operator()(size_t i) const { return (i / inner) % len; }
};
AxisIndex axis_index(const Shape& shape, int64_t axis, size_t values) {
  if (values == 1) return {};
  AxisIndex at;
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) at.inner *= static_cast<size_t>(shape[d]);
  at.len = static_cast<size_t>(shape[static_cast<size_t>(axis)]);
  return at;
}

// Input i as floats of `dtype`: integers converted exactly (below 2^24); floats known at load
// uploaded once in `dtype` (an fp16 graph's scales stay fp32 for the integer ops' rescale), others
// as they are or converted.
Result<Arg> floats_of(OpContext& ctx, size_t i, DType dtype) {
  const Value& v = ctx.input(i);
  if (is_floating(v.type) && v.is_host() && dtype != ctx.float_dtype()) {
    return ctx.derived_input(i, std::string("as ") + dtype_name(dtype),
                             [&]() -> Result<Arg> { return upload_host_tensor(ctx.runtime(), *v.host, dtype); });
  }
  RECON_ASSIGN_OR_RETURN(Arg in, is_floating(ctx.input(i).type) ? ctx.float_input(i) : ctx.device_input(i));
  if (in.dtype() == dtype) return in;
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.scratch(dtype, in.shape()));
  RECON_RETURN_IF_ERROR(gpu::ops::cast(ctx.graph(), in, out));
  return out;
}

// A scale or zero point for a tensor of `rank` axes: a scalar (shape [] or [1]) as it is, a 1-D
// vector viewed along `axis` (its length there, 1 elsewhere) so that it broadcasts per axis.
Result<Arg> along_axis(const Arg& v, int64_t axis, size_t rank) {
  if (v.shape().size() != 1 || v.shape()[0] == 1) return v;
  Shape shape(rank, 1);
  shape[static_cast<size_t>(axis)] = v.shape()[0];
  return gpu::ops::reshape_view(v, shape);
}

// Input i as floats of `dtype` along `axis` of a tensor of `rank` axes, or nothing where the node
// omits it (a zero point of 0).
Result<std::optional<Arg>> param_along(OpContext& ctx, size_t i, DType dtype, int64_t axis, size_t rank) {
  if (!ctx.has_input(i)) return std::optional<Arg>{};
  RECON_ASSIGN_OR_RETURN(Arg v, floats_of(ctx, i, dtype));
  RECON_ASSIGN_OR_RETURN(Arg viewed, along_axis(v, axis, rank));
  return std::optional<Arg>{viewed};
}

// The type a quantizing op writes: its zero point's (input i), uint8 when omitted.
Result<ElemType> quantized_type(OpContext& ctx, size_t i) {
  const ElemType t = ctx.has_input(i) ? ctx.input(i).type : ElemType::kUint8;
  if (!is_8bit(t)) return ctx.fail(std::string("quantizing into ") + elem_type_name(t) + " (int8 and uint8 only)");
  return t;
}

// out = saturate(round(q) + zero point): q (floats of out's shape) rounded half to even, the zero
// point added, clipped to the type's range and converted into out's i32 words (exactly: the
// values are integral). q is overwritten.
Status saturate_into(OpContext& ctx, const Arg& q, const std::optional<Arg>& zero_point, const Arg& out,
                     ElemType type) {
  const bool is_signed = type == ElemType::kInt8;
  RECON_RETURN_IF_ERROR(gpu::ops::unary(ctx.graph(), gpu::ops::UnaryOp::kRound, q, q));
  if (zero_point) RECON_RETURN_IF_ERROR(gpu::ops::binary_add(ctx.graph(), q, *zero_point, q));
  RECON_RETURN_IF_ERROR(gpu::ops::unary(ctx.graph(), gpu::ops::UnaryOp::kClip, q, q, 1.0f, 0.0f,
                                        is_signed ? -128.0f : 0.0f, is_signed ? 127.0f : 255.0f));
  return gpu::ops::cast(ctx.graph(), q, out);
}

// The axis a per-axis scale (input 1, 1-D of more than one element; opset 13 on) lies along,
// normalised against x's rank; 0 for a scalar scale, which ignores it.
Result<int64_t> quant_axis(OpContext& ctx, size_t rank) {
  const Shape& scale = ctx.input(1).shape;
  if (scale.size() != 1 || scale[0] == 1) return int64_t{0};
  int64_t axis = ctx.attr_int("axis", 1);
  RECON_RETURN_IF_ERROR(ctx.normalise_axis(axis, static_cast<int64_t>(rank)));
  return axis;
}

// A float accumulator of `shape` for the integer products (fp32 whatever the execution dtype: its
// sums are exact integers).
MakeOutput accumulator(OpContext& ctx, std::optional<Arg>& acc) {
  return [&ctx, &acc](const Shape& shape) -> Result<Arg> {
    RECON_ASSIGN_OR_RETURN(Arg t, ctx.scratch(DType::kF32, shape));
    acc = t;
    return t;
  };
}

// shifted() of an operand and zero point known at load (weights): computed once on the host and
// kept with the input.
Result<Arg> shifted_on_host(OpContext& ctx, size_t i, size_t zp_input, int64_t axis) {
  const std::string zp_name = ctx.has_input(zp_input) ? ctx.node().inputs[zp_input] : "";
  return ctx.derived_input(i, "less " + zp_name + " along " + std::to_string(axis), [&]() -> Result<Arg> {
    const Shape& shape = ctx.input(i).shape;
    RECON_ASSIGN_OR_RETURN(std::vector<int64_t> x, host_int64s(*ctx.input(i).host));
    std::vector<int64_t> zp{0};
    if (ctx.has_input(zp_input)) {
      RECON_ASSIGN_OR_RETURN(zp, host_int64s(*ctx.input(zp_input).host));
    }
    const AxisIndex at = axis_index(shape, axis, zp.size());
    if (zp.size() != at.len) {
      return ctx.fail("a zero point of " + std::to_string(zp.size()) + " for an axis of " + std::to_string(at.len));
    }
    std::vector<float> diff(x.size());
    for (size_t k = 0; k < x.size(); ++k) diff[k] = static_cast<float>(x[k] - zp[at(k)]);
    return upload_host_tensor(ctx.runtime(), make_float_tensor(shape, diff), DType::kF32);
  });
}

// Input i less its zero point (input zp_input, along `axis`) as fp32: exact, |x − zp| ≤ 255.
Result<Arg> shifted(OpContext& ctx, size_t i, size_t zp_input, int64_t axis) {
  if (!is_8bit(ctx.input(i).type)) {
    return ctx.fail(std::string("operand of type ") + elem_type_name(ctx.input(i).type) + " (int8 and uint8 only)");
  }
  axis = std::max<int64_t>(axis, 0);
  if (ctx.input(i).is_host() && (!ctx.has_input(zp_input) || ctx.input(zp_input).is_host())) {
    return shifted_on_host(ctx, i, zp_input, axis);
  }
  RECON_ASSIGN_OR_RETURN(Arg x, floats_of(ctx, i, DType::kF32));
  const size_t rank = x.shape().size();
  RECON_ASSIGN_OR_RETURN(auto zp, param_along(ctx, zp_input, DType::kF32, axis, rank));
  if (!zp) return x;
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.scratch(DType::kF32, x.shape()));
  RECON_RETURN_IF_ERROR(gpu::ops::binary_sub(ctx.graph(), x, *zp, out));
  return out;
}

// x's elements [k0, k1) along `axis` as an fp32 copy; x itself where that is all of it.
Result<Arg> slab(OpContext& ctx, const Arg& x, size_t axis, int64_t k0, int64_t k1) {
  if (k0 == 0 && k1 == x.shape()[axis]) return x;
  std::vector<gpu::ops::SliceAxis> axes(axis + 1);
  axes[axis] = {k0, k1, 1};
  Shape shape = x.shape();
  shape[axis] = k1 - k0;
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.scratch(DType::kF32, shape));
  RECON_RETURN_IF_ERROR(gpu::ops::slice(ctx.graph(), x, out, axes));
  return out;
}

// Records partial product c (of the chunks integer_sum asks for) into the fp32 tensor `make` gives.
using Partial = std::function<Status(int64_t c, const MakeOutput& make)>;

// The sum in i32 of `chunks` partial products, each exact in fp32, into the tensor `make` gives:
// the first converted into it, each later one converted and added.
Result<Arg> integer_sum(OpContext& ctx, int64_t chunks, const Partial& partial, const MakeOutput& make) {
  std::optional<Arg> acc;
  for (int64_t c = 0; c < chunks; ++c) {
    std::optional<Arg> part;
    RECON_RETURN_IF_ERROR(partial(c, accumulator(ctx, part)));
    if (!acc) {
      RECON_ASSIGN_OR_RETURN(acc, make(part->shape()));
      RECON_RETURN_IF_ERROR(gpu::ops::cast(ctx.graph(), *part, *acc));
      continue;
    }
    RECON_ASSIGN_OR_RETURN(Arg words, ctx.scratch(DType::kI32, part->shape()));
    RECON_RETURN_IF_ERROR(gpu::ops::cast(ctx.graph(), *part, words));
    RECON_RETURN_IF_ERROR(gpu::ops::binary_add(ctx.graph(), *acc, words, *acc));
  }
  return *acc;
}

// How many chunks of at most `per_chunk` split `n`, and the first index of chunk c.
int64_t chunk_count(int64_t n, int64_t per_chunk) {
  return (n + per_chunk - 1) / per_chunk;
}
int64_t chunk_start(int64_t n, int64_t chunks, int64_t c) {
  return c * ((n + chunks - 1) / chunks);
}

// MatMul of inputs a and b less their zero points (a's per row, b's per column), in i32 into the
// tensor `make` gives: K in chunks of at most kMaxExactTerms, each an exact fp32 GEMM.
Result<Arg> integer_matmul(OpContext& ctx, size_t a, size_t a_zp, size_t b, size_t b_zp, const MakeOutput& make) {
  const size_t rank_a = ctx.input(a).shape.size(), rank_b = ctx.input(b).shape.size();
  if (rank_a == 0 || rank_b == 0) return ctx.fail("a scalar operand");
  RECON_ASSIGN_OR_RETURN(Arg sa, shifted(ctx, a, a_zp, static_cast<int64_t>(rank_a) - 2));
  RECON_ASSIGN_OR_RETURN(Arg sb, shifted(ctx, b, b_zp, static_cast<int64_t>(rank_b) - 1));
  const int64_t k = sa.shape().back();
  if (k == 0) return ctx.fail("an empty inner dimension");
  const int64_t chunks = chunk_count(k, kMaxExactTerms);
  gpu::ops::MatmulOptions opt;
  opt.path = ctx.gemm_path();
  const Partial partial = [&](int64_t c, const MakeOutput& out) -> Status {
    const int64_t k0 = chunk_start(k, chunks, c), k1 = std::min(k, chunk_start(k, chunks, c + 1));
    RECON_ASSIGN_OR_RETURN(Arg pa, slab(ctx, sa, rank_a - 1, k0, k1));
    RECON_ASSIGN_OR_RETURN(Arg pb, slab(ctx, sb, rank_b == 1 ? 0 : rank_b - 2, k0, k1));
    return matmul_of(ctx, pa, pb, opt, out);
  };
  return integer_sum(ctx, chunks, partial, make);
}

// Conv of inputs x and w less their zero points (w's per output channel), plus an optional int32
// bias (input `bias`), in i32 into the tensor `make` gives: the input channels in chunks whose sums
// hold at most kMaxExactTerms products, each an exact fp32 convolution (group 1; a grouped one must
// fit one chunk). Padding adds zeros to x − zp: x's zero point.
Result<Arg> integer_conv(OpContext& ctx, size_t x, size_t x_zp, size_t w, size_t w_zp, size_t bias,
                         const MakeOutput& make) {
  const Shape& ws = ctx.input(w).shape;
  if (ws.size() < 3) return ctx.fail("a weight of shape " + shape_string(ws));
  int64_t taps = 1;
  for (size_t d = 2; d < ws.size(); ++d) taps *= ws[d];
  const int64_t channels = ws[1], per_chunk = kMaxExactTerms / taps;
  const int64_t chunks = per_chunk == 0 ? 0 : chunk_count(channels, per_chunk);
  if (chunks == 0 || (chunks > 1 && ctx.attr_int("group", 1) != 1)) {
    return ctx.fail("sums of " + std::to_string(channels * taps) + " products in one piece (at most " +
                    std::to_string(kMaxExactTerms) + " stay exact in fp32; only a group-1 convolution is split " +
                    "along its channels, into pieces of whole kernels)");
  }
  RECON_ASSIGN_OR_RETURN(Arg sx, shifted(ctx, x, x_zp, 0));
  RECON_ASSIGN_OR_RETURN(Arg sw, shifted(ctx, w, w_zp, 0));
  const Partial partial = [&](int64_t c, const MakeOutput& out) -> Status {
    const int64_t c0 = chunk_start(channels, chunks, c), c1 = std::min(channels, chunk_start(channels, chunks, c + 1));
    RECON_ASSIGN_OR_RETURN(Arg px, slab(ctx, sx, 1, c0, c1));
    RECON_ASSIGN_OR_RETURN(Arg pw, slab(ctx, sw, 1, c0, c1));
    return conv_of(ctx, px, pw, std::nullopt, out);
  };
  RECON_ASSIGN_OR_RETURN(Arg acc, integer_sum(ctx, chunks, partial, make));
  if (!ctx.has_input(bias)) return acc;
  RECON_ASSIGN_OR_RETURN(Arg words, ctx.device_input(bias));
  RECON_ASSIGN_OR_RETURN(Arg b, along_axis(words, 1, acc.shape().size()));
  RECON_RETURN_IF_ERROR(gpu::ops::binary_add(ctx.graph(), acc, b, acc));
  return acc;
}

// The integer products' result as QLinearMatMul and QLinearConv give it: sum (i32) · (a_scale ·
// b_scale / y_scale) in fp32, quantized with y's zero point; a's and b's scales scalars or along
// a_axis and b_axis of the sum.
Status requantize(OpContext& ctx, const Arg& sum, size_t a_scale, int64_t a_axis, size_t b_scale, int64_t b_axis,
                  size_t y_scale, size_t y_zp) {
  RECON_ASSIGN_OR_RETURN(ElemType type, quantized_type(ctx, y_zp));
  RECON_ASSIGN_OR_RETURN(Arg acc, ctx.scratch(DType::kF32, sum.shape()));
  RECON_RETURN_IF_ERROR(gpu::ops::cast(ctx.graph(), sum, acc));
  const size_t rank = acc.shape().size();
  RECON_ASSIGN_OR_RETURN(auto sa, param_along(ctx, a_scale, DType::kF32, a_axis, rank));
  RECON_ASSIGN_OR_RETURN(auto sb, param_along(ctx, b_scale, DType::kF32, b_axis, rank));
  RECON_ASSIGN_OR_RETURN(auto sy, param_along(ctx, y_scale, DType::kF32, 0, rank));
  if (!sa || !sb || !sy) return ctx.fail("a scale omitted");
  RECON_ASSIGN_OR_RETURN(Shape mshape, gpu::ops::broadcast_shape(sa->shape(), sb->shape()));
  RECON_ASSIGN_OR_RETURN(Arg multiplier, ctx.scratch(DType::kF32, mshape));
  RECON_RETURN_IF_ERROR(gpu::ops::binary_mul(ctx.graph(), *sa, *sb, multiplier));
  RECON_RETURN_IF_ERROR(gpu::ops::binary_div(ctx.graph(), multiplier, *sy, multiplier));
  RECON_RETURN_IF_ERROR(gpu::ops::binary_mul(ctx.graph(), acc, multiplier, acc));
  RECON_ASSIGN_OR_RETURN(auto zp, param_along(ctx, y_zp, DType::kF32, 0, rank));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, type, acc.shape()));
  return saturate_into(ctx, acc, zp, out, type);
}

// DequantizeLinear of values known at load (a QDQ model's weights), folded once on the host in the
// device's fp32 arithmetic: x − zp exact, one rounding of the product.
Result<HostTensor> fold_dequantize(const OpContext& ctx, int64_t axis) {
  const Shape& shape = ctx.input(0).shape;
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> x, host_int64s(*ctx.input(0).host));
  RECON_ASSIGN_OR_RETURN(std::vector<double> scale, host_doubles(*ctx.input(1).host));
  std::vector<int64_t> zp(scale.size(), 0);
  if (ctx.has_input(2)) {
    RECON_ASSIGN_OR_RETURN(zp, host_int64s(*ctx.input(2).host));
  }
  const AxisIndex at = axis_index(shape, axis, scale.size());
  if (zp.size() != scale.size() || scale.size() != at.len) {
    return invalid_argument("a scale of " + std::to_string(scale.size()) + " and a zero point of " +
                            std::to_string(zp.size()) + " for an axis of " + std::to_string(at.len));
  }
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = static_cast<float>(x[i] - zp[at(i)]) * static_cast<float>(scale[at(i)]);
  }
  return make_tensor(ElemType::kFloat, shape, y);
}

// Output 0 (int32) for the integer products.
MakeOutput int32_output(OpContext& ctx) {
  return [&ctx](const Shape& shape) { return ctx.new_output(0, ElemType::kInt32, shape); };
}

// An i32 scratch tensor for the integer products that the quantized ops rescale.
MakeOutput int32_scratch(OpContext& ctx) {
  return [&ctx](const Shape& shape) { return ctx.scratch(DType::kI32, shape); };
}

}  // namespace

// Quantizing divides in fp32 whatever the execution dtype: fp16 storage of x / scale (spaced 0.25
// from 256) would move some quotients to the other side of a rounding tie.
Status quantize_linear(OpContext& ctx) {
  if (!is_floating(ctx.input(0).type)) return ctx.fail("quantizing a tensor of integers");
  RECON_ASSIGN_OR_RETURN(ElemType type, quantized_type(ctx, 2));
  RECON_ASSIGN_OR_RETURN(Arg x, floats_of(ctx, 0, DType::kF32));
  const size_t rank = x.shape().size();
  RECON_ASSIGN_OR_RETURN(int64_t axis, quant_axis(ctx, rank));
  RECON_ASSIGN_OR_RETURN(auto scale, param_along(ctx, 1, DType::kF32, axis, rank));
  RECON_ASSIGN_OR_RETURN(auto zp, param_along(ctx, 2, DType::kF32, axis, rank));
  RECON_ASSIGN_OR_RETURN(Arg q, ctx.scratch(DType::kF32, x.shape()));
  RECON_RETURN_IF_ERROR(gpu::ops::binary_div(ctx.graph(), x, *scale, q));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, type, x.shape()));
  return saturate_into(ctx, q, zp, out, type);
}

Status dequantize_linear(OpContext& ctx) {
  const ElemType type = ctx.input(0).type;
  if (!is_8bit(type) && type != ElemType::kInt32) {
    return ctx.fail(std::string("dequantizing ") + elem_type_name(type) + " (int8, uint8 and int32 only)");
  }
  const size_t rank = ctx.input(0).shape.size();
  RECON_ASSIGN_OR_RETURN(int64_t axis, quant_axis(ctx, rank));
  if (ctx.all_inputs_on_host() && shape_numel(ctx.input(0).shape) <= kMaxFoldElements) {
    return ctx.set_host_result(0, fold_dequantize(ctx, axis));
  }
  const DType dtype = ctx.float_dtype();
  RECON_ASSIGN_OR_RETURN(Arg x, floats_of(ctx, 0, dtype));
  RECON_ASSIGN_OR_RETURN(auto scale, param_along(ctx, 1, dtype, axis, rank));
  RECON_ASSIGN_OR_RETURN(auto zp, param_along(ctx, 2, dtype, axis, rank));
  RECON_ASSIGN_OR_RETURN(Arg out, ctx.new_output(0, ElemType::kFloat, x.shape()));
  if (!zp) return gpu::ops::binary_mul(ctx.graph(), x, *scale, out);
  RECON_ASSIGN_OR_RETURN(Arg diff, ctx.scratch(dtype, x.shape()));
  RECON_RETURN_IF_ERROR(gpu::ops::binary_sub(ctx.graph(), x, *zp, diff));
  return gpu::ops::binary_mul(ctx.graph(), diff, *scale, out);
}

// y_scale = (max(x, 0) − min(x, 0)) / 255, y_zero_point = saturate(round(−min(x, 0) / y_scale)),
// y = saturate(round(x / y_scale) + y_zero_point), each as ONNX's reference computes it in fp32
// (whatever the execution dtype, as QuantizeLinear does).
Status dynamic_quantize_linear(OpContext& ctx) {
  const DType dtype = DType::kF32;
  RECON_ASSIGN_OR_RETURN(Arg x, floats_of(ctx, 0, dtype));
  RECON_ASSIGN_OR_RETURN(Arg flat, gpu::ops::reshape_view(x, {1, shape_numel(x.shape())}));
  RECON_ASSIGN_OR_RETURN(Arg lo, ctx.scratch(dtype, {1}));
  RECON_ASSIGN_OR_RETURN(Arg hi, ctx.scratch(dtype, {1}));
  RECON_RETURN_IF_ERROR(gpu::ops::reduce_min(ctx.graph(), flat, lo, 1));
  RECON_RETURN_IF_ERROR(gpu::ops::reduce_max(ctx.graph(), flat, hi, 1));
  const float inf = std::numeric_limits<float>::infinity();
  RECON_RETURN_IF_ERROR(gpu::ops::unary(ctx.graph(), gpu::ops::UnaryOp::kClip, lo, lo, 1.0f, 0.0f, -inf, 0.0f));
  RECON_RETURN_IF_ERROR(gpu::ops::unary(ctx.graph(), gpu::ops::UnaryOp::kClip, hi, hi, 1.0f, 0.0f, 0.0f, inf));
  RECON_ASSIGN_OR_RETURN(Arg scale, ctx.scratch(dtype, {1}));
  RECON_ASSIGN_OR_RETURN(Arg qmax, ctx.scratch(dtype, {1}));
  RECON_RETURN_IF_ERROR(gpu::ops::fill(ctx.graph(), qmax, 255.0f));
  RECON_RETURN_IF_ERROR(gpu::ops::binary_sub(ctx.graph(), hi, lo, scale));
  RECON_RETURN_IF_ERROR(gpu::ops::binary_div(ctx.graph(), scale, qmax, scale));
  RECON_RETURN_IF_ERROR(gpu::ops::scale_shift(ctx.graph(), lo, lo, -1.0f, 0.0f));
  RECON_RETURN_IF_ERROR(gpu::ops::binary_div(ctx.graph(), lo, scale, lo));
  RECON_ASSIGN_OR_RETURN(Arg zp_out, ctx.new_output(2, ElemType::kUint8, {}));
  RECON_ASSIGN_OR_RETURN(Arg zp, gpu::ops::reshape_view(zp_out, {1}));
  // lo becomes the zero point as a float: rounded and clipped, its value exact.
  RECON_RETURN_IF_ERROR(saturate_into(ctx, lo, std::nullopt, zp, ElemType::kUint8));
  RECON_ASSIGN_OR_RETURN(Arg scale_out, ctx.new_output(1, ElemType::kFloat, {}));
  RECON_ASSIGN_OR_RETURN(Arg scale_view, gpu::ops::reshape_view(scale_out, {1}));
  RECON_RETURN_IF_ERROR(gpu::ops::cast(ctx.graph(), scale, scale_view));
  RECON_ASSIGN_OR_RETURN(Arg q, ctx.scratch(dtype, x.shape()));
  RECON_RETURN_IF_ERROR(gpu::ops::binary_div(ctx.graph(), x, scale, q));
  RECON_ASSIGN_OR_RETURN(Arg y, ctx.new_output(0, ElemType::kUint8, x.shape()));
  return saturate_into(ctx, q, lo, y, ElemType::kUint8);
}

Status matmul_integer(OpContext& ctx) {
  return integer_matmul(ctx, 0, 2, 1, 3, int32_output(ctx)).status();
}

Status conv_integer(OpContext& ctx) {
  return integer_conv(ctx, 0, 2, 1, 3, /*bias=*/4, int32_output(ctx)).status();
}

Status qlinear_matmul(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg acc, integer_matmul(ctx, 0, 2, 3, 5, int32_scratch(ctx)));
  const auto rank = static_cast<int64_t>(acc.shape().size());
  return requantize(ctx, acc, 1, std::max<int64_t>(rank - 2, 0), 4, rank - 1, 6, 7);
}

Status qlinear_conv(OpContext& ctx) {
  RECON_ASSIGN_OR_RETURN(Arg acc, integer_conv(ctx, 0, 2, 3, 5, /*bias=*/8, int32_scratch(ctx)));
  return requantize(ctx, acc, 1, 0, 4, /*b_axis=*/1, 6, 7);
}

}  // namespace recon::gpu::onnx::ops_builders
