// Top-k along the last axis: for in [..., n], values [..., k] (in's dtype, f32 or f16) and indices
// [..., k] (i32) hold the k largest elements of each row, best first — or the k smallest with
// largest = false. Equal values rank by the lower index, so results are deterministic.
// 1 ≤ k ≤ min(n, kMaxTopK). Used for descriptor matching: rows of a similarity matrix → the
// best candidates per query (k = 1 is ops::argmax, which also takes any axis).
//
// One workgroup per row (128 invocations); each keeps its own sorted top-k in registers, then k
// rounds of a shared-memory tree pick the results. Cost ≈ one read of the row plus k·log2(128)
// barriers per row. NaN inputs give unspecified results.
//
// Large tensors: rows are split into dispatches over windows (layout.h); a single row over one
// binding is refused.
//
// Tolerance (tests/gpu/ops/topk_test.cpp): exact — values are copies of the input, indices exact.
#pragma once

#include <cstdint>

#include "gpu/graph.h"

namespace recon::gpu::ops {

inline constexpr int64_t kMaxTopK = 128;

Status topk(Graph& g, const Arg& in, const Arg& values, const Arg& indices, int64_t k, bool largest = true);

}  // namespace recon::gpu::ops
