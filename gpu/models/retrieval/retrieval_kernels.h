// The retrieval shaders (shaders/retrieval_*.comp) as graph dispatches. Internal to
// gpu/models/retrieval/; every operand is an f32/i32 tensor that fits one storage binding
// (callers split the work by images to keep the inputs so; outputs are bound whole).
#pragma once

#include "gpu/graph.h"

namespace recon::gpu::retrieval {

// norm [rows] = ‖x[r, :]‖₂ for x [rows, cols].
Status token_norm(Graph& g, const Arg& x, const Arg& norm);
// The top K tokens of each row of one chunk's attn [b, N] into rows [image0, image0 + b) of the
// whole outputs top_attn [B, K] (descending) and top_idx [B, K] (i32 token indices, ties to the lower
// index).
Status select_top(Graph& g, const Arg& attn, const Arg& top_attn, const Arg& top_idx, int64_t image0);
// out[image0 + i, r] = feat[i, idx[image0 + i, r]] for one chunk's feat [b, N, C]; idx [B, K] and
// out [B, K, C] are the whole outputs.
Status gather_tokens(Graph& g, const Arg& feat, const Arg& idx, const Arg& out, int64_t image0);
// masked [B, B] = sim with the diagonal at −inf.
Status exclude_self(Graph& g, const Arg& sim, const Arg& masked);

}  // namespace recon::gpu::retrieval
