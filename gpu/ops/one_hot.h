// One-hot rows from indices (shaders/one_hot.comp): out[o, j, r] = j == index[o, r] ? on : off over
// an [outer, depth, inner] view, an index below 0 counting from the end (index + depth) and one
// outside [−depth, depth) giving a row of `off` (ONNX OneHot). ONNX Hardmax is argmax along the
// axis, then this.
//
// Tolerance (tests/gpu/ops/one_hot_test.cpp): exact.
#pragma once

#include "gpu/graph.h"

namespace recon::gpu::ops {

// indices: i32 [outer, inner] (any shape of that many elements); out: f32 or f16 whose shape,
// viewed around `axis`, is [outer, depth, inner].
Status one_hot(Graph& g, const Arg& indices, const Arg& out, int axis, float on = 1.0f, float off = 0.0f);

}  // namespace recon::gpu::ops
