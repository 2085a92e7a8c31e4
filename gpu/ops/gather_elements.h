// ONNX GatherElements (torch.gather) and Gather (torch.index_select, embedding lookups), one kernel
// (shaders/gather_elements.comp). GatherElements: out has the indices' shape, and out[c] = data[c
// with its coordinate along `axis` replaced by indices[c]]. Gather: out's shape is data's with the
// axis replaced by the indices' shape, out[o, j..., i] = data[o, indices[j...], i]. Negative indices
// count from the end. It moves bits, so data may be f32, i32 (32-bit words) or f16; indices are i32
// (ONNX's int64 indices as the device holds them). An index outside [−len, len) reads the nearest
// edge: the device cannot fail a dispatch, and ONNX leaves it undefined.
//
// GatherND (shaders/gather_nd.comp): indices [b..., t..., k] after `batch_dims` axes b shared with
// data; each tuple of k indices picks the slice data[b..., i1, ..., ik] (negative from the end, out
// of range clamped to the edge); out is indices[:-1] + data[batch_dims + k:].
//
// Tolerance (tests/gpu/ops/gather_elements_test.cpp): exact.
#pragma once

#include "gpu/graph.h"

namespace recon::gpu::ops {

inline constexpr int kMaxGatherElementsRank = 6;

// data, indices and out of one rank; out.shape == indices.shape; along every other axis than
// `axis` the indices' extent at most data's. At most 6 axes once neighbours the indices span whole
// (off the axis) are merged.
Status gather_elements(Graph& g, const Arg& data, const Arg& indices, const Arg& out, int axis);

// data of rank ≥ 1, indices of any rank, out shaped data[:axis] + indices + data[axis + 1:].
Status gather(Graph& g, const Arg& data, const Arg& indices, const Arg& out, int axis);

// data of rank ≥ 1, indices [data[:batch_dims]..., t..., k] with batch_dims + k ≤ data's rank and
// k ≤ 8, out shaped indices[:-1] + data[batch_dims + k:].
Status gather_nd(Graph& g, const Arg& data, const Arg& indices, const Arg& out, int batch_dims);

}  // namespace recon::gpu::ops
