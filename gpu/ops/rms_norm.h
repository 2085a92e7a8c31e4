// RMSNorm over the last axis: out = x / sqrt(mean(x²) + eps) · weight. One workgroup per row, fp32
// statistics. Large tensors are split by rows as in layer_norm.h.
// Tolerance (tests/gpu/ops/rms_norm_test.cpp): fp32 ≤ 1e-5, fp16 ≤ 4e-3, relative to max(|ref|, 1).
#pragma once

#include <optional>

#include "gpu/graph.h"

namespace recon::gpu::ops {

// weight is optional, [C] with x's dtype; x and out share shape and dtype (f32 or f16).
Status rms_norm(Graph& g, const Arg& x, const std::optional<Arg>& weight, const Arg& out, float eps);

}  // namespace recon::gpu::ops
