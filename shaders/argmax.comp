#version 450
// Index of the largest (OP 0) or smallest (OP 1) element along the middle axis of a
// [outer, axis, inner] view, as int32. Ties go to the lower index (OP 2 and 3: the same with ties
// to the higher index, ONNX's select_last_index); a NaN counts as larger (and smaller) than
// everything, so the first (last) NaN wins, as in PyTorch. Same two schedules as reduce.comp.
#include "common.glsl"
layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint WG = 256;  // power of two
layout(constant_id = 2) const uint ROW_PER_GROUP = 1;
layout(local_size_x_id = 1) in;
layout(binding = 0) readonly buffer In { STORE_T src[]; };
layout(binding = 1) writeonly buffer Out { int dst[]; };
// Mirrored by ReducePush in gpu/ops/reduce.cpp.
layout(push_constant) uniform Push { uint outer, axis, inner, base_in, base_out; } p;

shared float s_val[WG];
shared uint s_idx[WG];

// Does (v, i) come before (bv, bi)? bi == 0xffffffff marks "nothing yet".
bool better(float v, uint i, float bv, uint bi) {
  if (bi == 0xffffffffu) return true;
  if (i == 0xffffffffu) return false;
  bool vn = isnan(v), bn = isnan(bv);
  const bool earlier = OP >= 2 ? i > bi : i < bi;
  if (vn || bn) return vn && (!bn || earlier);
  if ((OP & 1u) == 1u) {
    v = -v;
    bv = -bv;
  }
  return v > bv || (v == bv && earlier);
}

void main() {
  if (ROW_PER_GROUP == 1) {
    const uint lid = gl_LocalInvocationID.x;
    const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (row >= p.outer) return;  // uniform across the workgroup
    float bv = 0.0;
    uint bi = 0xffffffffu;
    const uint base = p.base_in + row * p.axis;
    for (uint j = lid; j < p.axis; j += WG) {
      float v = float(src[base + j]);
      if (better(v, j, bv, bi)) {
        bv = v;
        bi = j;
      }
    }
    s_val[lid] = bv;
    s_idx[lid] = bi;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
      if (lid < s && better(s_val[lid + s], s_idx[lid + s], s_val[lid], s_idx[lid])) {
        s_val[lid] = s_val[lid + s];
        s_idx[lid] = s_idx[lid + s];
      }
      barrier();
    }
    if (lid == 0) dst[p.base_out + row] = int(s_idx[0]);
  } else {
    const uint t = linear_invocation(WG);
    if (t >= p.outer * p.inner) return;
    const uint o = t / p.inner, r = t - o * p.inner;
    uint idx = p.base_in + o * p.axis * p.inner + r;
    float bv = 0.0;
    uint bi = 0xffffffffu;
    for (uint j = 0; j < p.axis; ++j, idx += p.inner) {
      float v = float(src[idx]);
      if (better(v, j, bv, bi)) {
        bv = v;
        bi = j;
      }
    }
    dst[p.base_out + t] = int(bi);
  }
}
