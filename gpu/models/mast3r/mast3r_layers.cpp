#include "gpu/models/mast3r/mast3r_layers.h"

#include "gpu/ops/conv2d.h"
#include "gpu/ops/conv_transpose2d.h"
#include "gpu/ops/linear.h"
#include "gpu/ops/upsample.h"

namespace recon::gpu::mast3r {
namespace {

ops::Epilogue epilogue(Act act, const Arg* residual) {
  ops::Epilogue e;
  e.activation = act == Act::kRelu   ? ops::Activation::kRelu
                 : act == Act::kGelu ? ops::Activation::kGeluErf  // nn.GELU() is the exact erf form
                                     : ops::Activation::kNone;
  if (residual != nullptr) e.residual = *residual;
  return e;
}

std::optional<Arg> optional_arg(const Tensor* t) {
  return t ? std::optional<Arg>(Arg(*t)) : std::nullopt;
}

}  // namespace

Status linear(Graph& g, const Capabilities& caps, const Arg& x, const LinearWeight& w, const Tensor* b, const Arg& out,
              Act act, const Arg* residual) {
  return ops::linear(g, caps, x, w.tensor, optional_arg(b), out, epilogue(act, residual), w.path, w.layout);
}

Status linear_rope(Graph& g, const Capabilities& caps, const Arg& x, const LinearWeight& w, const Tensor* b,
                   const Arg& out, const ops::RopeGrid& grid, int64_t heads, int64_t head_dim) {
  ops::Epilogue e;
  e.rope = ops::RopeEpilogue{grid, heads, head_dim};
  return ops::linear(g, caps, x, w.tensor, optional_arg(b), out, e, w.path, w.layout);
}

Status conv2d(Graph& g, const Capabilities& caps, const Arg& x, const ConvWeight& w, const Tensor* b, const Arg& out,
              int stride, int padding, Act act, const Arg* residual, bool input_relu) {
  ops::Conv2dParams params;
  params.stride_h = params.stride_w = stride;
  params.pad_h = params.pad_w = padding;
  params.input_relu = input_relu;
  return ops::conv2d(g, caps, x, w.tensor, optional_arg(b), out, params, epilogue(act, residual), w.path, w.layout);
}

Status conv_transpose2d(Graph& g, const Capabilities& caps, const Arg& x, const Tensor& w, const Tensor* b,
                        const Arg& out, int kernel, ops::GemmPath path) {
  if (w.shape().size() != 4 || w.shape()[2] != kernel || w.shape()[3] != kernel) {
    return invalid_argument("conv_transpose2d: weight is not (in, out, k, k) with k = " + std::to_string(kernel));
  }
  return ops::conv_transpose2d(g, caps, x, w, optional_arg(b), out, {}, path);
}

Status upsample2x(Graph& g, const Arg& in, const Arg& out) {
  return ops::upsample_bilinear(g, in, out, /*align_corners=*/true);
}

}  // namespace recon::gpu::mast3r
