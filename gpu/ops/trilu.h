// The upper or lower triangle of the last two axes (ONNX Trilu, torch.triu / torch.tril), one kernel
// (shaders/trilu.comp): out[..., i, j] = in[..., i, j] where j − i ≥ k (upper) or j − i ≤ k (lower),
// else 0. It selects and never computes, so it takes f32, i32 (32-bit words) and f16, and keeps
// inf and NaN where they are kept.
//
// Tolerance (tests/gpu/ops/trilu_test.cpp): exact.
#pragma once

#include <cstdint>

#include "gpu/graph.h"

namespace recon::gpu::ops {

// in and out of one shape (rank ≥ 2) and dtype; k any diagonal offset (beyond the matrix it keeps
// everything or nothing).
Status trilu(Graph& g, const Arg& in, const Arg& out, int64_t k, bool upper);

}  // namespace recon::gpu::ops
