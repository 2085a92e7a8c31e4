// LayerNorm over the last axis (MASt3R's norm1/norm2/norm3/norm_y/enc_norm/dec_norm, spec §3.3, §4).
// One workgroup per row (over many rows, workgroups that loop over them: wide_access.h,
// layer_norm_loop_groups); statistics in fp32, two-pass (mean, then Σ(x − mean)²), so inputs with
// a large offset and a small spread keep their precision.
//
// Large tensors: rows are split into several dispatches (row views of ≤ max_binding_bytes(), see
// layout.h) when x/out exceed one binding; an oversized graph slot is refused.
// Tolerance (tests/gpu/ops/layer_norm_test.cpp, against float64 on the stored inputs):
// fp32 ≤ 1e-5, fp16 ≤ 4e-3, each relative to max(|reference|, 1).
#pragma once

#include <optional>

#include "gpu/graph.h"

namespace recon::gpu::ops {

// out = (x − mean) / sqrt(var + eps) · weight + bias over the last axis of x (any rank ≥ 1).
// weight and bias are optional, [C] with x's dtype; x and out share shape and dtype (f32 or f16).
Status layer_norm(Graph& g, const Arg& x, const std::optional<Arg>& weight, const std::optional<Arg>& bias,
                  const Arg& out, float eps);

}  // namespace recon::gpu::ops
