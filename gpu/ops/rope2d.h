// MASt3R's 2-D rotary position embedding (croco RoPE2D, base 100; spec §3.2), applied IN PLACE to
// head vectors stored token-major. It runs as its own pass before attention (attention.h's
// *_rope helpers record it), rotating q and k where the projection wrote them, so the attention
// kernels stay pure and the packed qkv tensor needs no copy.
//
// For head vector t (D elements, D % 4 == 0) of the token at grid position (y, x):
//   t[0, D/2) rotates with p = y, t[D/2, D) with p = x; inside each half element j pairs with j + D/4;
//   ω_j = 1 / base^(j / (D/4)), θ = p·ω_j (fp32, as the reference computes them);
//   out[j] = t[j]·cos θ − t[j+D/4]·sin θ,  out[j+D/4] = t[j+D/4]·cos θ + t[j]·sin θ.
// Positions are the integer grid: token n of each batch item sits at (y, x) = (n / w, n % w), so the
// op takes the grid (h, w) instead of a positions buffer.
//
// Large tensors: split along the batch axis into several dispatches (row views, layout.h) when x
// exceeds one binding; one batch item must fit. An oversized graph slot is refused.
// Tolerance (tests/gpu/ops/rope2d_test.cpp, against the formula in float64): fp32 ≤ 2e-6 absolute
// per unit of |t|; fp16 ≤ 2e-3 relative to max(|ref|, 1) (one extra fp16 rounding of the result).
#pragma once

#include <cstdint>

#include "gpu/graph.h"

namespace recon::gpu::ops {

// A view's token grid: N = h · w tokens, row-major (token n = y·w + x).
struct RopeGrid {
  int64_t h = 0;
  int64_t w = 0;
};

inline constexpr float kRopeBase = 100.0f;  // MASt3R / CroCo

// Rotates, in place, the `heads` consecutive head vectors of `head_dim` elements that start at column
// `col_offset` of every token row of x [B, N, C] (f32 or f16), N = grid.h · grid.w.
// For MASt3R's packed qkv [B, N, 3·H·D] one call with col_offset 0 and heads = 2·H rotates q and k.
Status rope2d(Graph& g, const Arg& x, int64_t col_offset, int64_t heads, int64_t head_dim, const RopeGrid& grid,
              float base = kRopeBase);

}  // namespace recon::gpu::ops
