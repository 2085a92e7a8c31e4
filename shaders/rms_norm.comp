#version 450
// RMSNorm over the last axis: y = x · rsqrt(mean(x²) + eps) · weight. One workgroup per row, fp32
// statistics; subgroupAdd then one shared slot per subgroup (any subgroup size).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer X { STORE_T x[]; };
layout(binding = 1) readonly buffer Wt { STORE_T weight[]; };  // x again when unused
layout(binding = 2) writeonly buffer Y { STORE_T y[]; };

const uint kHasWeight = 1u;
layout(push_constant) uniform Push {
  uint rows;
  uint cols;
  uint flags;  // kHasWeight
  float eps;
} p;

shared float partial[WG];

float workgroup_sum(float v) {
  v = subgroupAdd(v);
  if (subgroupElect()) partial[gl_SubgroupID] = v;
  barrier();
  float total = 0.0;
  for (uint i = 0; i < gl_NumSubgroups; ++i) total += partial[i];
  barrier();
  return total;
}

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.rows) return;
  const uint base = row * p.cols;
  const uint tid = gl_LocalInvocationID.x;

  float ss = 0.0;
  for (uint i = tid; i < p.cols; i += WG) {
    const float v = float(x[base + i]);
    ss += v * v;
  }
  const float r = inversesqrt(workgroup_sum(ss) / float(p.cols) + p.eps);
  const bool has_w = (p.flags & kHasWeight) != 0u;
  for (uint i = tid; i < p.cols; i += WG) {
    float v = float(x[base + i]) * r;
    if (has_w) v *= float(weight[i]);
    y[base + i] = STORE_T(v);
  }
}
