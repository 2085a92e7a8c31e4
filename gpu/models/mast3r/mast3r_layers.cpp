#include "gpu/models/mast3r/mast3r_layers.h"

#include "gpu/ops/conv2d.h"
#include "gpu/ops/conv_transpose2d.h"
#include "gpu/ops/layer_norm.h"
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

Status vit_block(Graph& g, const Capabilities& caps, const Mast3rWeights& w, const std::string& prefix, const Tensor& x,
                 const VitBlockScratch& s, const ops::AttentionConfig& attn, float eps, const ops::RopeGrid* rope) {
  const std::string& b = prefix;
  const int64_t C = x.shape().back();
  const Arg residual = x;
  RECON_RETURN_IF_ERROR(ops::layer_norm(g, x, w.at(b + "norm1.weight"), w.at(b + "norm1.bias"), s.t, eps));
  if (rope != nullptr) {
    RECON_RETURN_IF_ERROR(linear_rope(g, caps, s.t, w.linear(b + "attn.qkv.weight"), &w.at(b + "attn.qkv.bias"), s.qkv,
                                      *rope, 2 * attn.heads, attn.head_dim));
  } else {
    RECON_RETURN_IF_ERROR(linear(g, caps, s.t, w.linear(b + "attn.qkv.weight"), &w.at(b + "attn.qkv.bias"), s.qkv));
  }
  RECON_RETURN_IF_ERROR(ops::attention(g, caps, {s.qkv, 0}, {s.qkv, C}, {s.qkv, 2 * C}, s.att, attn));
  RECON_RETURN_IF_ERROR(
      linear(g, caps, s.att, w.linear(b + "attn.proj.weight"), &w.at(b + "attn.proj.bias"), x, Act::kNone, &residual));
  RECON_RETURN_IF_ERROR(ops::layer_norm(g, x, w.at(b + "norm2.weight"), w.at(b + "norm2.bias"), s.t, eps));
  RECON_RETURN_IF_ERROR(
      linear(g, caps, s.t, w.linear(b + "mlp.fc1.weight"), &w.at(b + "mlp.fc1.bias"), s.hid, Act::kGelu));
  return linear(g, caps, s.hid, w.linear(b + "mlp.fc2.weight"), &w.at(b + "mlp.fc2.bias"), x, Act::kNone, &residual);
}

Status upsample2x(Graph& g, const Arg& in, const Arg& out) {
  return ops::upsample_bilinear(g, in, out, /*align_corners=*/true);
}

}  // namespace recon::gpu::mast3r
