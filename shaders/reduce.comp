#version 450
// Reduction of a [outer, axis, inner] view along its middle axis: sum, mean, max, min or product (OP, the
// order of ops::ReduceOp). Two schedules (ROW_PER_GROUP):
//   1: inner == 1 and long rows: one workgroup per row, a strided scan then a shared-memory tree;
//   0: one invocation per (outer, inner) output scanning the axis (coalesced across inner).
// Sums use compensated (Kahan) accumulation in fp32.
#include "common.glsl"
layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint WG = 256;  // power of two
layout(constant_id = 2) const uint ROW_PER_GROUP = 1;
layout(local_size_x_id = 1) in;
layout(binding = 0) readonly buffer In { STORE_T src[]; };
layout(binding = 1) writeonly buffer Out { STORE_T dst[]; };
// Mirrored by ReducePush in gpu/ops/reduce.cpp. base_* are element offsets into the bound windows.
layout(push_constant) uniform Push { uint outer, axis, inner, base_in, base_out; } p;

shared float partial[WG];

const bool kSum = OP <= 1;

float identity_value() {
  if (kSum) return 0.0;
  if (OP == 4) return 1.0;
  return OP == 2 ? uintBitsToFloat(0xff800000u) : uintBitsToFloat(0x7f800000u);
}

float combine(float a, float b) { return OP == 2 ? max(a, b) : (OP == 3 ? min(a, b) : (OP == 4 ? a * b : a + b)); }

// Kahan accumulator: acc + comp carries the sum; max, min and product ignore comp.
void accumulate(inout float acc, inout float comp, float v) {
  if (kSum) {
    precise float y = v - comp;
    precise float t = acc + y;
    comp = (t - acc) - y;
    acc = t;
  } else {
    acc = combine(acc, v);
  }
}

float finish(float r) { return OP == 1 ? r / float(p.axis) : r; }

void main() {
  if (ROW_PER_GROUP == 1) {
    const uint lid = gl_LocalInvocationID.x;
    const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (row >= p.outer) return;  // uniform across the workgroup
    float acc = identity_value(), comp = 0.0;
    const uint base = p.base_in + row * p.axis;
    for (uint j = lid; j < p.axis; j += WG) accumulate(acc, comp, float(src[base + j]));
    partial[lid] = acc - comp;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
      if (lid < s) partial[lid] = combine(partial[lid], partial[lid + s]);
      barrier();
    }
    if (lid == 0) dst[p.base_out + row] = STORE_T(finish(partial[0]));
  } else {
    const uint t = linear_invocation(WG);
    if (t >= p.outer * p.inner) return;
    const uint o = t / p.inner, r = t - o * p.inner;
    uint idx = p.base_in + o * p.axis * p.inner + r;
    float acc = identity_value(), comp = 0.0;
    for (uint j = 0; j < p.axis; ++j, idx += p.inner) accumulate(acc, comp, float(src[idx]));
    dst[p.base_out + t] = STORE_T(finish(acc - comp));
  }
}
