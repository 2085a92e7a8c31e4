// Reductions along one axis of an N-D tensor: sum, mean, max, min (f32/f16 in and out, fp32
// accumulation; sums are compensated), and arg-max / arg-min (int32 indices). The tensor is viewed
// as [outer, axis, inner]; out has in's shape without `axis`, or with it as 1 (keepdim) — both
// name the same elements. Negative axes count from the end; the axis must not be empty.
//
// Schedules: inner == 1 with rows of ≥ 64 elements takes one workgroup per row (strided scan and a
// shared-memory tree); everything else one invocation per output, scanning the axis with
// coalesced reads across inner. A long axis with few outputs (e.g. [1, 1e6, 3] over axis 1) is
// therefore sequential per output: correct, not fast.
//
// Ties: argmax/argmin return the lowest index among equal values (the highest with last_index); a
// NaN wins over every number and the first NaN (the last with last_index) wins among NaNs
// (PyTorch's behaviour). max/min propagate NaN as GLSL max/min do (unspecified; do not rely on it).
//
// Large tensors: split along outer (windows, see layout.h); a single outer row over one binding
// (e.g. reducing a flat tensor of more than 128 MiB) is refused with INVALID_ARGUMENT.
//
// Tolerances (tests/gpu/ops/reduce_test.cpp): sum/mean ≤ 1e-6 relative to Σ|x| (fp32); max/min
// and arg* exact; fp16 storage adds the output rounding (≤ 1e-3 relative to Σ|x| / max|x|).
#pragma once

#include <cstdint>

#include "gpu/graph.h"

namespace recon::gpu::ops {

// The order is the shader's OP specialisation constant (shaders/reduce.comp).
enum class ReduceOp : uint32_t { kSum = 0, kMean = 1, kMax = 2, kMin = 3, kProd = 4 };

Status reduce(Graph& g, ReduceOp op, const Arg& in, const Arg& out, int axis);
inline Status reduce_sum(Graph& g, const Arg& in, const Arg& out, int axis) {
  return reduce(g, ReduceOp::kSum, in, out, axis);
}
inline Status reduce_mean(Graph& g, const Arg& in, const Arg& out, int axis) {
  return reduce(g, ReduceOp::kMean, in, out, axis);
}
inline Status reduce_max(Graph& g, const Arg& in, const Arg& out, int axis) {
  return reduce(g, ReduceOp::kMax, in, out, axis);
}
inline Status reduce_min(Graph& g, const Arg& in, const Arg& out, int axis) {
  return reduce(g, ReduceOp::kMin, in, out, axis);
}

// out (i32) = index of the max / min along `axis`; ties (and NaNs) go to the highest index instead
// of the lowest with last_index (ONNX's select_last_index).
Status argmax(Graph& g, const Arg& in, const Arg& out, int axis, bool last_index = false);
Status argmin(Graph& g, const Arg& in, const Arg& out, int axis, bool last_index = false);

}  // namespace recon::gpu::ops
