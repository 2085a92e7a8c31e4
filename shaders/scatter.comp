#version 450
// ScatterElements and ScatterND (gpu/ops/scatter.h), written as gathers so the result does not
// depend on the order invocations run in: one invocation per output element starts from data and
// applies, in the updates' order, every update that lands on it (`none` keeps the last one, as the
// ONNX reference does; add, mul, max and min fold them in that order). The cost is each output
// element reading every candidate update: ELEMENTS reads the indices along the axis at its own
// off-axis coordinates (len of the axis), ND every index tuple (count × k). ELEM_INT = 1 holds i32
// words with integer arithmetic; otherwise STORE_T (f32 or f16 storage) with fp32 arithmetic.
// Indices are i32, negative ones counted from the end; one outside the axis after that never lands.
#include "common.glsl"
layout(constant_id = 0) const uint ND = 0;         // 0: ScatterElements, 1: ScatterND
layout(constant_id = 1) const uint REDUCTION = 0;  // 0 none, 1 add, 2 mul, 3 max, 4 min
layout(local_size_x = 256) in;
#if ELEM_INT
#define ELEM_T int
#define ACC_T int
#else
#define ELEM_T STORE_T
#define ACC_T float
#endif
layout(binding = 0) readonly buffer Data { ELEM_T data[]; };
layout(binding = 1) readonly buffer Indices { int indices[]; };
layout(binding = 2) readonly buffer Updates { ELEM_T updates[]; };
layout(binding = 3) writeonly buffer Out { ELEM_T dst[]; };
// Mirrored by ScatterPush in gpu/ops/scatter.cpp. ELEMENTS: data_shape and index_shape over `rank`
// axes. ND: rank = k (an index tuple's length), data_shape[0, k) the axes the tuples address,
// count tuples, inner elements per addressed slice.
layout(push_constant) uniform Push {
  uint n, rank, axis, count, inner, pad0, pad1, pad2;
  uint data_shape[8];
  uint index_shape[8];
} p;

ACC_T combine(ACC_T acc, ACC_T u) {
  if (REDUCTION == 1u) return acc + u;
  if (REDUCTION == 2u) return acc * u;
  if (REDUCTION == 3u) return max(acc, u);
  if (REDUCTION == 4u) return min(acc, u);
  return u;
}

// The linear position of ELEMENTS' output element e's first candidate update and their stride,
// or false where e lies outside the updates off the axis (no update can land on it).
bool elements_candidates(uint e, out uint base, out uint axis_stride, out int along) {
  uint rem = e, stride = 1;
  base = 0;
  axis_stride = 0;
  along = 0;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const uint extent = p.data_shape[d];
    const uint q = rem / extent;
    const uint c = rem - q * extent;
    rem = q;
    if (uint(d) == p.axis) {
      along = int(c);
      axis_stride = stride;
    } else {
      if (c >= p.index_shape[d]) return false;
      base += c * stride;
    }
    stride *= p.index_shape[d];
  }
  return true;
}

void main() {
  const uint e = linear_invocation(256);
  if (e >= p.n) return;
  ACC_T acc = ACC_T(data[e]);
  if (ND == 0u) {
    uint base, axis_stride;
    int along;
    if (elements_candidates(e, base, axis_stride, along)) {
      const int len = int(p.data_shape[p.axis]);
      for (uint j = 0; j < p.index_shape[p.axis]; ++j) {
        const uint u = base + j * axis_stride;
        int k = indices[u];
        if (k < 0) k += len;
        if (k == along) acc = combine(acc, ACC_T(updates[u]));
      }
    }
  } else {
    const uint slot = e / p.inner, i = e - slot * p.inner;
    for (uint t = 0; t < p.count; ++t) {
      uint lin = 0;
      bool inside = true;
      for (uint j = 0; j < p.rank; ++j) {
        const int dim = int(p.data_shape[j]);
        int v = indices[t * p.rank + j];
        if (v < 0) v += dim;
        inside = inside && v >= 0 && v < dim;
        lin = lin * uint(dim) + uint(v);
      }
      if (inside && lin == slot) acc = combine(acc, ACC_T(updates[t * p.inner + i]));
    }
  }
  dst[e] = ELEM_T(acc);
}
