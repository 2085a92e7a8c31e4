// The few layer calls the MASt3R graph builder makes, in the model's own terms (PyTorch weight
// layouts, optional bias, fused activation and residual), mapped onto the op library. Keeping the
// mapping here means the builder reads like the architecture (spec §3–§5).
#pragma once

#include "gpu/capabilities.h"
#include "gpu/graph.h"
#include "gpu/models/mast3r/mast3r_weights.h"

namespace recon::gpu::mast3r {

enum class Act { kNone, kRelu, kGelu };

// out[..., N] = act(x[..., K] · wᵀ + b) (+ residual). w is nn.Linear's weight as Mast3rWeights
// uploaded it ([N, K] or transposed), b is [N] or null. `residual` may be the same tensor as `out`
// (in-place residual stream).
Status linear(Graph& g, const Capabilities& caps, const Arg& x, const LinearWeight& w, const Tensor* b, const Arg& out,
              Act act = Act::kNone, const Arg* residual = nullptr);

// linear with MASt3R's 2-D RoPE on the output's first `heads` heads of `head_dim` (q, or the q and
// k of a packed qkv), rows being the tokens of `grid`: the projections rotate what they write, so
// attention reads q and k ready (ops::RopeEpilogue).
Status linear_rope(Graph& g, const Capabilities& caps, const Arg& x, const LinearWeight& w, const Tensor* b,
                   const Arg& out, const ops::RopeGrid& grid, int64_t heads, int64_t head_dim);

// NCHW convolution, w nn.Conv2d's weight as Mast3rWeights uploaded it (OIHW or tap by tap), zero
// padding. `residual` as for linear; `input_relu` convolves relu(x) (the ResidualConvUnit's
// pre-activation) without a separate pass.
Status conv2d(Graph& g, const Capabilities& caps, const Arg& x, const ConvWeight& w, const Tensor* b, const Arg& out,
              int stride, int padding, Act act = Act::kNone, const Arg* residual = nullptr, bool input_relu = false);

// NCHW transposed convolution with stride = kernel, weights (in, out, k, k) (nn.ConvTranspose2d),
// on the GEMM path Mast3rWeights::gemm_path gives for them.
Status conv_transpose2d(Graph& g, const Capabilities& caps, const Arg& x, const Tensor& w, const Tensor* b,
                        const Arg& out, int kernel, ops::GemmPath path);

// Bilinear ×2 upsampling with align_corners=True (every upsample in MASt3R), NCHW.
Status upsample2x(Graph& g, const Arg& in, const Arg& out);

}  // namespace recon::gpu::mast3r
