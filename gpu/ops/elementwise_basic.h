// The runtime's first ops: fill, shader copy and elementwise add. Each records one dispatch
// into a Graph. (The full op library lives beside these, one op per file pair.)
#pragma once

#include "gpu/graph.h"

namespace recon::gpu::ops {

// out[i] = value. f32 or f16.
Status fill(Graph& g, const Arg& out, float value);
// dst = src, byte for byte, through a compute shader (uvec4 path when the size allows).
Status copy(Graph& g, const Arg& src, const Arg& dst);
// out = a + b for tensors of one shape and dtype (f32 or f16).
Status add(Graph& g, const Arg& a, const Arg& b, const Arg& out);

}  // namespace recon::gpu::ops
