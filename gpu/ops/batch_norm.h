// Inference BatchNorm (ONNX BatchNormalization, PyTorch BatchNorm{1,2,3}d in eval mode) on NCHW-style
// tensors [N, C, spatial...]: out = (x − mean[c]) / sqrt(var[c] + eps) · weight[c] + bias[c].
// Elementwise; the per-channel parameters are [C] with x's dtype; fp32 arithmetic.
//
// Large tensors: split along N into several dispatches (row views, layout.h) when x/out exceed one
// binding; one image must fit. An oversized graph slot is refused.
// Tolerance (tests/gpu/ops/batch_norm_test.cpp): fp32 ≤ 1e-5, fp16 ≤ 2e-3, relative to max(|ref|, 1).
#pragma once

#include <optional>

#include "gpu/graph.h"

namespace recon::gpu::ops {

// x and out: [N, C, ...] (rank ≥ 2), same shape and dtype (f32 or f16). weight/bias optional.
Status batch_norm(Graph& g, const Arg& x, const Arg& mean, const Arg& var, const std::optional<Arg>& weight,
                  const std::optional<Arg>& bias, const Arg& out, float eps);

}  // namespace recon::gpu::ops
