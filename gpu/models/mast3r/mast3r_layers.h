// The few layer calls the MASt3R graph builder makes, in the model's own terms (PyTorch weight
// layouts, optional bias, fused activation and residual), mapped onto the op library. Keeping the
// mapping here means the builder reads like the architecture (spec §3–§5).
#pragma once

#include "gpu/capabilities.h"
#include "gpu/graph.h"
#include "gpu/models/mast3r/mast3r_weights.h"
#include "gpu/ops/attention.h"
#include "gpu/ops/rope2d.h"

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

// The scratch tensors of pre-norm ViT blocks over a [B, T, C] token stream: t [B, T, C],
// qkv [B, T, 3C], att [B, T, C], hid [B, T, hidden].
struct VitBlockScratch {
  Tensor t, qkv, att, hid;
};

// One pre-norm ViT block (CroCo's encoder block, and DINOv2's that DUNE uses), in place on the token
// stream x: x += proj(attention(qkv(norm1 x))), then x += fc2(GELU(fc1(norm2 x))). `prefix` names
// the block's weights ("enc_blocks.3."); with `rope`, q and k rotate on that grid (MASt3R's
// encoder), without it attention reads them as they are (DUNE, whose layer scale Mast3rWeights
// folded into attn.proj and mlp.fc2).
Status vit_block(Graph& g, const Capabilities& caps, const Mast3rWeights& w, const std::string& prefix, const Tensor& x,
                 const VitBlockScratch& s, const ops::AttentionConfig& attn, float eps, const ops::RopeGrid* rope);

// Bilinear ×2 upsampling with align_corners=True (every upsample in MASt3R), NCHW.
Status upsample2x(Graph& g, const Arg& in, const Arg& out);

}  // namespace recon::gpu::mast3r
