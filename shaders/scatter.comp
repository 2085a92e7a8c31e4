#version 450
// ScatterElements and ScatterND (gpu/ops/scatter.h), deterministic whatever order invocations run
// in. PASS 0 (add, mul, max, min) is written as a gather: one invocation per output element starts
// from data and folds, in the updates' order, every update that lands on it; its cost is each
// output element reading every candidate update: ELEMENTS the indices along the axis at its own
// off-axis coordinates (len of the axis), ND every index tuple (count × k). `none` takes two
// passes instead, O(output + updates): PASS 1 (one invocation per update, or per ND tuple) marks
// each destination with the last update that lands on it (atomicMax of its position + 1, which
// does not depend on the order, in `last`, zeroed first), PASS 2 (one invocation per output
// element) writes that update or the data. Both give the ONNX reference's result with duplicates
// (the last update under `none`). ELEM_INT = 1 holds i32 words with integer arithmetic; otherwise
// STORE_T (f32 or f16 storage) with fp32 arithmetic. Indices are i32, negative ones counted from
// the end; one outside the axis after that lands nowhere. The atomic is relaxed at queue-family
// scope (device scope needs a feature the context does not enable; see match_update.comp): PASS 2,
// a later dispatch, is the only reader.
#pragma use_vulkan_memory_model
#extension GL_KHR_memory_scope_semantics : require
#include "common.glsl"
layout(constant_id = 0) const uint ND = 0;         // 0: ScatterElements, 1: ScatterND
layout(constant_id = 1) const uint REDUCTION = 0;  // 0 none, 1 add, 2 mul, 3 max, 4 min
layout(constant_id = 2) const uint PASS = 0;       // 0 fold every candidate; 1 mark the last; 2 apply it
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
layout(binding = 4) buffer Last { int last[]; };  // PASS 1 and 2: per destination, 1 + its last update
// Mirrored by ScatterPush in gpu/ops/scatter.cpp. n: this pass's invocations. ELEMENTS: data_shape
// and index_shape over `rank` axes. ND: rank = k (an index tuple's length), data_shape[0, k) the
// axes the tuples address, count tuples, inner elements per addressed slice.
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

// ND: the slot (row-major over data_shape[0, k)) tuple t addresses, or -1 outside the data.
int nd_slot(uint t) {
  uint lin = 0;
  for (uint j = 0; j < p.rank; ++j) {
    const int dim = int(p.data_shape[j]);
    int v = indices[t * p.rank + j];
    if (v < 0) v += dim;
    if (v < 0 || v >= dim) return -1;
    lin = lin * uint(dim) + uint(v);
  }
  return int(lin);
}

// ELEMENTS: the output element update u lands on, or -1 outside the axis.
int elements_destination(uint u) {
  uint rem = u, at = 0, stride = 1;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const uint extent = p.index_shape[d];
    const uint q = rem / extent;
    uint c = rem - q * extent;
    rem = q;
    if (uint(d) == p.axis) {
      const int len = int(p.data_shape[d]);
      int k = indices[u];
      if (k < 0) k += len;
      if (k < 0 || k >= len) return -1;
      c = uint(k);
    }
    at += c * stride;
    stride *= p.data_shape[d];
  }
  return int(at);
}

void main() {
  const uint e = linear_invocation(256);
  if (e >= p.n) return;
  if (PASS == 1u) {  // e: an update (ELEMENTS) or a tuple (ND)
    const int at = ND == 0u ? elements_destination(e) : nd_slot(e);
    if (at >= 0) atomicMax(last[at], int(e) + 1, gl_ScopeQueueFamily, gl_StorageSemanticsNone, gl_SemanticsRelaxed);
    return;
  }
  if (PASS == 2u) {  // e: an output element
    const uint slot = ND == 0u ? e : e / p.inner;
    const int w = last[slot];
    if (w == 0) {
      dst[e] = data[e];
    } else {
      dst[e] = updates[ND == 0u ? uint(w - 1) : uint(w - 1) * p.inner + (e - slot * p.inner)];
    }
    return;
  }
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
      if (nd_slot(t) == int(slot)) acc = combine(acc, ACC_T(updates[t * p.inner + i]));
    }
  }
  dst[e] = ELEM_T(acc);
}
