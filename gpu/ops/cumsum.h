// Cumulative sums along one axis (ONNX CumSum, torch.cumsum), shaders/cumsum.comp: one invocation
// per line along the axis sums it in order, so lines are parallel and each line is serial (its
// length in steps). `exclusive` writes the sum of the elements before each one (0 first);
// `reverse` sums from the end.
//
// Tolerance (tests/gpu/ops/cumsum_test.cpp): f32 and i32 exact against an in-order sum (the same
// additions in the same order); f16 storage keeps an fp32 running sum, each output rounded once.
#pragma once

#include "gpu/graph.h"

namespace recon::gpu::ops {

// x and out of one shape and dtype (f32, f16 or i32), rank ≥ 1.
Status cumsum(Graph& g, const Arg& x, const Arg& out, int axis, bool exclusive = false, bool reverse = false);

}  // namespace recon::gpu::ops
