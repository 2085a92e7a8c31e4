// Local response normalisation across channels (ONNX LRN, PyTorch nn.LocalResponseNorm) on
// [N, C, spatial...] (f32 or f16, fp32 arithmetic):
//   y[n,c,s] = x[n,c,s] / (bias + alpha/size · Σ_{i = c − ⌊(size−1)/2⌋}^{c + ⌈(size−1)/2⌉} x[n,i,s]²)^beta
// with the sum clipped to the channels that exist. One invocation per output (shaders/lrn.comp).
//
// Large tensors: in and out must each fit one binding.
//
// Tolerance (tests/gpu/ops/lrn_test.cpp): ≤ 2e-6 relative (fp32); fp16 storage ≤ 1e-3.
#pragma once

#include <cstdint>

#include "gpu/graph.h"

namespace recon::gpu::ops {

struct LrnParams {
  int64_t size = 5;
  float alpha = 1e-4f, beta = 0.75f, bias = 1.0f;
};

Status lrn(Graph& g, const Arg& in, const Arg& out, const LrnParams& params);

}  // namespace recon::gpu::ops
