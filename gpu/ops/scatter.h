// ONNX ScatterElements (torch.scatter / scatter_reduce) and ScatterND (index_put), one kernel
// (shaders/scatter.comp) that writes out = data with the updates applied, deterministically
// whatever order the GPU runs in, with duplicate indices giving the ONNX reference's result. Without
// a reduction it takes two passes, O(out + updates): each destination's last update is marked
// (an atomic max of update positions, which the order cannot change), then written. A reduction
// (add, mul, max, min) is written as a gather: each output element reads every update that could
// land on it and folds those that do in the updates' order, at the cost of reading, per output
// element, the indices along the axis (ScatterElements) or every index tuple (ScatterND): fine
// for the sizes graphs reduce into, quadratic for a large ScatterND.
//
// data, updates and out share a dtype: f32 or f16 (fp32 arithmetic) or i32 (integer arithmetic);
// indices are i32 (ONNX's int64 as the device holds them), negative ones counting from the end, and
// an index outside its axis after that is dropped (ONNX leaves it undefined).
//
// Tolerance (tests/gpu/ops/scatter_test.cpp): exact for none, max and min and for integers;
// add and mul round once, in f32, before an f16 store.
#pragma once

#include "gpu/graph.h"

namespace recon::gpu::ops {

inline constexpr int kMaxScatterRank = 8;

enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

// data and out of one shape; indices and updates of one shape and data's rank, at most data's
// extent along every axis but `axis`; out[c] = data[c] reduced with every updates[u] whose
// indices[u] names c[axis] and whose other coordinates are c's.
Status scatter_elements(Graph& g, const Arg& data, const Arg& indices, const Arg& updates, const Arg& out, int axis,
                        ScatterReduction reduction = ScatterReduction::kNone);

// indices [..., k] (k ≤ data's rank), updates shaped indices[:-1] + data[k:]: each tuple of k
// indices addresses a slice of data, into which its update slice is reduced.
Status scatter_nd(Graph& g, const Arg& data, const Arg& indices, const Arg& updates, const Arg& out,
                  ScatterReduction reduction = ScatterReduction::kNone);

}  // namespace recon::gpu::ops
