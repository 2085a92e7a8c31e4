#version 450
// GatherND (gpu/ops/gather_elements.h): out[b, t, i] = data[b, slot(indices[b, t, :]), i] over
// [batch, tuples, inner] views, where slot() is the row-major position a tuple of k indices
// addresses in data's k axes after the batch axes. Negative indices count from the end; one
// outside its axis after that is clamped to the edge (the device cannot fail a dispatch). It moves
// bits: ELEM_BITS = 32 moves f32/i32 words, 16 f16.
#include "layout_common.glsl"
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer Data { ELEM_T data[]; };
layout(binding = 1) readonly buffer Indices { int indices[]; };
layout(binding = 2) writeonly buffer Out { ELEM_T dst[]; };
// Mirrored by GatherNdPush in gpu/ops/gather_elements.cpp.
layout(push_constant) uniform Push {
  uint n, k, inner, tuples, slots, pad0, pad1, pad2;
  uint data_shape[8];  // the k addressed axes
} p;

void main() {
  const uint e = linear_invocation(256);
  if (e >= p.n) return;
  const uint row = e / p.inner, i = e - row * p.inner;  // row: the tuple over every batch
  const uint b = row / p.tuples;
  uint lin = 0;
  for (uint j = 0; j < p.k; ++j) {
    const int dim = int(p.data_shape[j]);
    int v = indices[row * p.k + j];
    if (v < 0) v += dim;
    lin = lin * uint(dim) + uint(clamp(v, 0, dim - 1));
  }
  dst[e] = data[(b * p.slots + lin) * p.inner + i];
}
