// Bilinear resampling of NCHW feature maps, [B, C, H, W] → [B, C, Ho, Wo] (f32 or f16, fp32
// arithmetic), with PyTorch's exact source coordinates (F.interpolate(mode='bilinear')):
//   align_corners = true:  src = o·(in − 1)/(out − 1)
//   align_corners = false: src = max((o + ½)·in/out − ½, 0)
// then i0 = ⌊src⌋, i1 = min(i0 + 1, in − 1), weights (1 − λ, λ) with λ = src − i0, in y and x.
// MASt3R's DPT uses ×2 with align_corners = true (spec §5.1). Downsampling works too (bilinear,
// no antialiasing, like PyTorch's default). Nearest is not provided.
//
// Two entry points, as PyTorch has two: `upsample_bilinear` takes the size from out (src uses
// in/out, split exactly in integer arithmetic); `upsample_bilinear_scale` takes scale factors:
// out must be ⌊in·scale⌋ and, with align_corners = false, src uses 1/scale in fp32 as PyTorch
// does (recompute_scale_factor unset) — which differs from in/out when in·scale is not whole.
//
// Large tensors: the B·C planes are split into dispatches over windows (layout.h); one plane
// over one binding is refused. Spatial sizes up to 32767.
//
// Tolerance (tests/gpu/ops/upsample_test.cpp), relative to max|in|: fp32 ≤ 1e-6 (size form),
// ≤ 2e-6 (scale form, whose fp32 coordinates carry ~|src|·1e-7); fp16 storage ≤ 1e-3.
#pragma once

#include "gpu/graph.h"

namespace recon::gpu::ops {

inline constexpr int64_t kMaxResampleExtent = 32767;

Status upsample_bilinear(Graph& g, const Arg& in, const Arg& out, bool align_corners);
Status upsample_bilinear_scale(Graph& g, const Arg& in, const Arg& out, double scale_h, double scale_w,
                               bool align_corners);

}  // namespace recon::gpu::ops
