#version 450
// GatherElements (gpu/ops/gather_elements.h): out[c] = data[c with c[axis] = indices[c]], negative
// indices from the end, out-of-range ones clamped to the edge. ELEM_BITS = 32 moves f32/i32 words,
// 16 f16. AXIS_INDICES = 1 (ONNX Gather): one index per position along the axis, shared by every
// other coordinate, so c[axis] = indices[c[axis]].
#include "layout_common.glsl"
layout(constant_id = 0) const uint AXIS_INDICES = 0;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer Data { ELEM_T data[]; };
layout(binding = 1) readonly buffer Indices { int indices[]; };
layout(binding = 2) writeonly buffer Out { ELEM_T dst[]; };
// Mirrored by GatherElementsPush in gpu/ops/gather_elements.cpp.
layout(push_constant) uniform Push {
  uint n, rank, axis, pad0;
  uint data_shape[6];
  uint index_shape[6];
} p;

void main() {
  const uint e = linear_invocation(256);
  if (e >= p.n) return;
  uint rem = e, src = 0, stride = 1;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const uint extent = p.index_shape[d];
    const uint q = rem / extent;
    uint c = rem - q * extent;
    rem = q;
    if (uint(d) == p.axis) {
      const int len = int(p.data_shape[d]);
      int k = indices[AXIS_INDICES != 0u ? c : e];
      if (k < 0) k += len;
      c = uint(clamp(k, 0, len - 1));
    }
    src += c * stride;
    stride *= p.data_shape[d];
  }
  dst[e] = data[src];
}
