// runtime.h's ops: each checks its operands (naming the one that is wrong), then hands a closure
// over the op library's call (gpu/ops/) to run_or_record. No kernels of its own: alpha, beta and
// the transposes are matmul's epilogue and operand layouts, the activations linear's and conv2d's.
#include <cmath>
#include <cstring>
#include <optional>

#include "gpu/ops/conv2d.h"
#include "gpu/ops/elementwise.h"
#include "gpu/ops/layer_norm.h"
#include "gpu/ops/linear.h"
#include "gpu/ops/matmul.h"
#include "gpu/ops/softmax.h"
#include "state.h"

using namespace recon;
using namespace recon::runtime_c;

namespace {

const gpu::Tensor& tensor_of(const recon_tensor* t) {
  return t->state->tensor;
}

std::optional<gpu::Arg> optional_arg(const recon_tensor* t) {
  if (t == nullptr) return std::nullopt;
  return gpu::Arg(tensor_of(t));
}

std::string shape_of(const recon_tensor* t) {
  return gpu::shape_string(tensor_of(t).shape());
}

std::string bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return std::to_string(u);
}

Status same_dtype(const recon_tensor* first, const char* first_name, const recon_tensor* other,
                  const char* other_name) {
  if (other == nullptr || tensor_of(other).dtype() == tensor_of(first).dtype()) return Status::ok();
  return invalid_argument(std::string(other_name) + " is " + dtype_string(tensor_of(other).dtype()) + " but " +
                          first_name + " is " + dtype_string(tensor_of(first).dtype()));
}

Status check_activation(recon_activation activation) {
  if (activation < RECON_ACTIVATION_NONE || activation > RECON_ACTIVATION_TANH) {
    return invalid_argument("activation " + std::to_string(static_cast<int>(activation)) +
                            " is not a recon_activation");
  }
  return Status::ok();
}

Status check_context(const recon_context* context) {
  return context == nullptr ? invalid_argument("context is NULL") : Status::ok();
}

// ---- per-op checks: shapes and dtypes, before anything is recorded --------------------------------

Status check_matmul(const recon_context* context, const recon_tensor* a, const recon_tensor* b, const recon_tensor* c,
                    uint32_t flags) {
  RECON_RETURN_IF_ERROR(check_context(context));
  RECON_RETURN_IF_ERROR(check_tensor(context, a, "a"));
  RECON_RETURN_IF_ERROR(check_tensor(context, b, "b"));
  RECON_RETURN_IF_ERROR(check_tensor(context, c, "c"));
  if ((flags & ~(RECON_TRANSPOSE_A | RECON_TRANSPOSE_B)) != 0) {
    return invalid_argument("flags " + std::to_string(flags) + " has bits other than RECON_TRANSPOSE_A/B");
  }
  RECON_RETURN_IF_ERROR(same_dtype(a, "a", b, "b"));
  RECON_RETURN_IF_ERROR(same_dtype(a, "a", c, "c"));
  if (c == a || c == b) return invalid_argument("c must not be a or b");
  const gpu::Shape &sa = tensor_of(a).shape(), &sb = tensor_of(b).shape(), &sc = tensor_of(c).shape();
  for (auto [s, name] : {std::pair{&sa, "a"}, std::pair{&sb, "b"}, std::pair{&sc, "c"}}) {
    if (s->size() != 2 && s->size() != 3) {
      return invalid_argument(std::string(name) + " is " + gpu::shape_string(*s) + "; 2-D or 3-D (batched) expected");
    }
  }
  const bool ta = flags & RECON_TRANSPOSE_A, tb = flags & RECON_TRANSPOSE_B;
  const size_t ra = sa.size(), rb = sb.size(), rc = sc.size();
  const int64_t m = ta ? sa[ra - 1] : sa[ra - 2], k = ta ? sa[ra - 2] : sa[ra - 1];
  const int64_t kb = tb ? sb[rb - 1] : sb[rb - 2], n = tb ? sb[rb - 2] : sb[rb - 1];
  if (k != kb) {
    return invalid_argument("inner dimensions differ: op(a) is " + std::to_string(m) + "x" + std::to_string(k) +
                            " (a " + shape_of(a) + "), op(b) is " + std::to_string(kb) + "x" + std::to_string(n) +
                            " (b " + shape_of(b) + ")");
  }
  if (sc[rc - 2] != m || sc[rc - 1] != n) {
    return invalid_argument("c is " + shape_of(c) + " but op(a)·op(b) is " + std::to_string(m) + "x" +
                            std::to_string(n));
  }
  if ((ra == 3 || rb == 3) && rc != 3)
    return invalid_argument("a or b is batched (3-D) but c " + shape_of(c) + " is not");
  if (ra == 3 && sa[0] != sc[0])
    return invalid_argument("batch of a " + shape_of(a) + " differs from c " + shape_of(c));
  if (rb == 3 && sb[0] != sc[0])
    return invalid_argument("batch of b " + shape_of(b) + " differs from c " + shape_of(c));
  return Status::ok();
}

Status check_binary(const recon_context* context, const recon_tensor* a, const recon_tensor* b,
                    const recon_tensor* out) {
  RECON_RETURN_IF_ERROR(check_context(context));
  RECON_RETURN_IF_ERROR(check_tensor(context, a, "a"));
  RECON_RETURN_IF_ERROR(check_tensor(context, b, "b"));
  RECON_RETURN_IF_ERROR(check_tensor(context, out, "out"));
  RECON_RETURN_IF_ERROR(same_dtype(a, "a", b, "b"));
  RECON_RETURN_IF_ERROR(same_dtype(a, "a", out, "out"));
  Result<gpu::Shape> shape = gpu::ops::broadcast_shape(tensor_of(a).shape(), tensor_of(b).shape());
  if (!shape.is_ok()) {
    return invalid_argument("a " + shape_of(a) + " and b " + shape_of(b) + " do not broadcast");
  }
  if (*shape != tensor_of(out).shape()) {
    return invalid_argument("out is " + shape_of(out) + " but a and b broadcast to " + gpu::shape_string(*shape));
  }
  if ((out == a || out == b) && tensor_of(a).shape() != tensor_of(b).shape()) {
    return invalid_argument("out may be a or b only where a and b have one shape");
  }
  return Status::ok();
}

// The operands of linear and conv2d: tensors of `context` (bias optional), all of one dtype.
Status check_weighted(const recon_context* context, const recon_tensor* input, const recon_tensor* weight,
                      const recon_tensor* bias, const recon_tensor* output) {
  RECON_RETURN_IF_ERROR(check_tensor(context, input, "input"));
  RECON_RETURN_IF_ERROR(check_tensor(context, weight, "weight"));
  RECON_RETURN_IF_ERROR(check_tensor(context, bias, "bias", true));
  RECON_RETURN_IF_ERROR(check_tensor(context, output, "output"));
  RECON_RETURN_IF_ERROR(same_dtype(input, "input", weight, "weight"));
  RECON_RETURN_IF_ERROR(same_dtype(input, "input", bias, "bias"));
  RECON_RETURN_IF_ERROR(same_dtype(input, "input", output, "output"));
  return Status::ok();
}

Status check_linear(const recon_context* context, const recon_tensor* input, const recon_tensor* weight,
                    const recon_tensor* bias, const recon_tensor* output, recon_activation activation) {
  RECON_RETURN_IF_ERROR(check_context(context));
  RECON_RETURN_IF_ERROR(check_weighted(context, input, weight, bias, output));
  RECON_RETURN_IF_ERROR(check_activation(activation));
  if (output == input || output == weight || output == bias) return invalid_argument("output must not be an input");
  const gpu::Shape &x = tensor_of(input).shape(), &w = tensor_of(weight).shape();
  if (w.size() != 2) return invalid_argument("weight is " + shape_of(weight) + "; [N, K] expected");
  if (x.back() != w[1]) {
    return invalid_argument("input " + shape_of(input) + " has K = " + std::to_string(x.back()) + " but weight " +
                            shape_of(weight) + " has K = " + std::to_string(w[1]));
  }
  if (bias != nullptr && tensor_of(bias).shape() != gpu::Shape{w[0]}) {
    return invalid_argument("bias is " + shape_of(bias) + "; [" + std::to_string(w[0]) + "] expected");
  }
  gpu::Shape want = x;
  want.back() = w[0];
  if (tensor_of(output).shape() != want) {
    return invalid_argument("output is " + shape_of(output) + "; " + gpu::shape_string(want) + " expected");
  }
  return Status::ok();
}

Result<gpu::ops::Conv2dParams> check_conv2d(const recon_context* context, const recon_conv2d_desc* desc,
                                            const recon_tensor* input, const recon_tensor* weight,
                                            const recon_tensor* bias, const recon_tensor* output,
                                            recon_activation* activation) {
  RECON_RETURN_IF_ERROR(check_context(context));
  if (desc == nullptr) return invalid_argument("desc is NULL");
  if (desc->struct_size == 0) return invalid_argument("desc->struct_size is 0 (initialise it with RECON_INIT)");
  recon_conv2d_desc d{};
  std::memcpy(&d, desc, std::min(sizeof(d), desc->struct_size));
  RECON_RETURN_IF_ERROR(check_weighted(context, input, weight, bias, output));
  RECON_RETURN_IF_ERROR(check_activation(d.activation));
  if (d.dilation_h > 1 || d.dilation_w > 1) {
    return unimplemented("dilation " + std::to_string(d.dilation_h) + "x" + std::to_string(d.dilation_w) +
                         ": the op library's conv2d has none");
  }
  if (output == input || output == weight || output == bias) return invalid_argument("output must not be an input");
  const gpu::Shape &x = tensor_of(input).shape(), &w = tensor_of(weight).shape();
  if (x.size() != 4) return invalid_argument("input is " + shape_of(input) + "; [B, Cin, H, W] expected");
  if (w.size() != 4) return invalid_argument("weight is " + shape_of(weight) + "; [Cout, Cin, KH, KW] expected");
  if (w[1] != x[1]) {
    return invalid_argument("weight " + shape_of(weight) + " has Cin = " + std::to_string(w[1]) + " but input " +
                            shape_of(input) + " has " + std::to_string(x[1]) + " channels");
  }
  if (bias != nullptr && tensor_of(bias).shape() != gpu::Shape{w[0]}) {
    return invalid_argument("bias is " + shape_of(bias) + "; [" + std::to_string(w[0]) + "] expected");
  }
  gpu::ops::Conv2dParams params;
  params.stride_h = d.stride_h == 0 ? 1 : d.stride_h;
  params.stride_w = d.stride_w == 0 ? 1 : d.stride_w;
  params.pad_h = d.pad_h;
  params.pad_w = d.pad_w;
  Result<gpu::Shape> want = gpu::ops::conv2d_output_shape(x, w, params);
  if (!want.is_ok()) return want.status();
  if (tensor_of(output).shape() != *want) {
    return invalid_argument("output is " + shape_of(output) + "; " + gpu::shape_string(*want) + " expected");
  }
  *activation = d.activation;
  return params;
}

Status check_rowwise(const recon_context* context, const recon_tensor* x, const recon_tensor* out) {
  RECON_RETURN_IF_ERROR(check_context(context));
  RECON_RETURN_IF_ERROR(check_tensor(context, x, "x"));
  RECON_RETURN_IF_ERROR(check_tensor(context, out, "out"));
  RECON_RETURN_IF_ERROR(same_dtype(x, "x", out, "out"));
  if (out == x) return invalid_argument("out must not be x");
  if (tensor_of(out).shape() != tensor_of(x).shape()) {
    return invalid_argument("out is " + shape_of(out) + " but x is " + shape_of(x));
  }
  return Status::ok();
}

Status check_layer_norm(const recon_context* context, const recon_tensor* x, const recon_tensor* weight,
                        const recon_tensor* bias, const recon_tensor* out, float eps) {
  RECON_RETURN_IF_ERROR(check_rowwise(context, x, out));
  RECON_RETURN_IF_ERROR(check_tensor(context, weight, "weight", true));
  RECON_RETURN_IF_ERROR(check_tensor(context, bias, "bias", true));
  RECON_RETURN_IF_ERROR(same_dtype(x, "x", weight, "weight"));
  RECON_RETURN_IF_ERROR(same_dtype(x, "x", bias, "bias"));
  const gpu::Shape c{tensor_of(x).shape().back()};
  for (auto [t, name] : {std::pair{weight, "weight"}, std::pair{bias, "bias"}}) {
    if (t != nullptr && tensor_of(t).shape() != c) {
      return invalid_argument(std::string(name) + " is " + shape_of(t) + "; " + gpu::shape_string(c) + " expected");
    }
  }
  if (!std::isfinite(eps) || eps < 0) return invalid_argument("eps " + std::to_string(eps) + " (finite, ≥ 0)");
  return Status::ok();
}

}  // namespace

namespace {

// recon_add and recon_mul: `op` (gpu::ops::binary_add or binary_mul) on checked operands.
template <typename Op>
recon_status binary(const char* name, const char* label, recon_context* context, recon_sequence* sequence,
                    const recon_tensor* a, const recon_tensor* b, recon_tensor* out, Op op) {
  return guarded([&] {
    const Status checked = check_binary(context, a, b, out);
    if (!checked.is_ok()) return fail(name, checked);
    return run_or_record(
        name, context, sequence, label, {{"a", a}, {"b", b}, {"out", out}},
        [ta = tensor_of(a), tb = tensor_of(b), to = tensor_of(out), op](gpu::Graph& g) { return op(g, ta, tb, to); });
  });
}

}  // namespace

extern "C" {

recon_status recon_matmul(recon_context* context, recon_sequence* sequence, const recon_tensor* a,
                          const recon_tensor* b, recon_tensor* c, float alpha, float beta, uint32_t flags) {
  return guarded([&] {
    const Status checked = check_matmul(context, a, b, c, flags);
    if (!checked.is_ok()) return fail("recon_matmul", checked);
    gpu::ops::MatmulOptions options;
    options.transpose_a = flags & RECON_TRANSPOSE_A;
    options.transpose_b = flags & RECON_TRANSPOSE_B;
    options.alpha = alpha;
    options.beta = beta;
    return run_or_record("recon_matmul", context, sequence,
                         "matmul " + bits(alpha) + " " + bits(beta) + " " + std::to_string(flags),
                         {{"a", a}, {"b", b}, {"c", c}},
                         [ta = tensor_of(a), tb = tensor_of(b), tc = tensor_of(c), options](gpu::Graph& g) {
                           return gpu::ops::matmul(g, g.runtime().caps(), ta, tb, tc, options);
                         });
  });
}

recon_status recon_add(recon_context* context, recon_sequence* sequence, const recon_tensor* a, const recon_tensor* b,
                       recon_tensor* out) {
  return binary("recon_add", "add", context, sequence, a, b, out,
                [](gpu::Graph& g, const gpu::Tensor& x, const gpu::Tensor& y, const gpu::Tensor& z) {
                  return gpu::ops::binary_add(g, x, y, z);
                });
}

recon_status recon_mul(recon_context* context, recon_sequence* sequence, const recon_tensor* a, const recon_tensor* b,
                       recon_tensor* out) {
  return binary("recon_mul", "mul", context, sequence, a, b, out,
                [](gpu::Graph& g, const gpu::Tensor& x, const gpu::Tensor& y, const gpu::Tensor& z) {
                  return gpu::ops::binary_mul(g, x, y, z);
                });
}

recon_status recon_linear(recon_context* context, recon_sequence* sequence, const recon_tensor* input,
                          const recon_tensor* weight, const recon_tensor* bias, recon_tensor* output,
                          recon_activation activation) {
  return guarded([&] {
    const Status checked = check_linear(context, input, weight, bias, output, activation);
    if (!checked.is_ok()) return fail("recon_linear", checked);
    gpu::ops::Epilogue epilogue;
    epilogue.activation = static_cast<gpu::ops::Activation>(activation);
    return run_or_record(
        "recon_linear", context, sequence, "linear " + std::to_string(static_cast<int>(activation)),
        {{"input", input}, {"weight", weight}, {"bias", bias}, {"output", output}},
        [x = tensor_of(input), w = tensor_of(weight), b = optional_arg(bias), o = tensor_of(output),
         epilogue](gpu::Graph& g) { return gpu::ops::linear(g, g.runtime().caps(), x, w, b, o, epilogue); });
  });
}

recon_status recon_conv2d(recon_context* context, recon_sequence* sequence, const recon_conv2d_desc* desc,
                          const recon_tensor* input, const recon_tensor* weight, const recon_tensor* bias,
                          recon_tensor* output) {
  return guarded([&] {
    recon_activation activation = RECON_ACTIVATION_NONE;
    Result<gpu::ops::Conv2dParams> params = check_conv2d(context, desc, input, weight, bias, output, &activation);
    if (!params.is_ok()) return fail("recon_conv2d", params.status());
    gpu::ops::Epilogue epilogue;
    epilogue.activation = static_cast<gpu::ops::Activation>(activation);
    const gpu::ops::Conv2dParams p = *params;
    return run_or_record(
        "recon_conv2d", context, sequence,
        "conv2d " + std::to_string(p.stride_h) + " " + std::to_string(p.stride_w) + " " + std::to_string(p.pad_h) +
            " " + std::to_string(p.pad_w) + " " + std::to_string(static_cast<int>(activation)),
        {{"input", input}, {"weight", weight}, {"bias", bias}, {"output", output}},
        [x = tensor_of(input), w = tensor_of(weight), b = optional_arg(bias), o = tensor_of(output), p,
         epilogue](gpu::Graph& g) { return gpu::ops::conv2d(g, g.runtime().caps(), x, w, b, o, p, epilogue); });
  });
}

recon_status recon_softmax(recon_context* context, recon_sequence* sequence, const recon_tensor* x, recon_tensor* out) {
  return guarded([&] {
    const Status checked = check_rowwise(context, x, out);
    if (!checked.is_ok()) return fail("recon_softmax", checked);
    return run_or_record(
        "recon_softmax", context, sequence, "softmax", {{"x", x}, {"out", out}},
        [tx = tensor_of(x), to = tensor_of(out)](gpu::Graph& g) { return gpu::ops::softmax(g, tx, to); });
  });
}

recon_status recon_layer_norm(recon_context* context, recon_sequence* sequence, const recon_tensor* x,
                              const recon_tensor* weight, const recon_tensor* bias, recon_tensor* out, float eps) {
  return guarded([&] {
    const Status checked = check_layer_norm(context, x, weight, bias, out, eps);
    if (!checked.is_ok()) return fail("recon_layer_norm", checked);
    return run_or_record("recon_layer_norm", context, sequence, "layer_norm " + bits(eps),
                         {{"x", x}, {"weight", weight}, {"bias", bias}, {"out", out}},
                         [tx = tensor_of(x), w = optional_arg(weight), b = optional_arg(bias), to = tensor_of(out),
                          eps](gpu::Graph& g) { return gpu::ops::layer_norm(g, tx, w, b, to, eps); });
  });
}

}  // extern "C"
