#version 450
// L2 normalisation over the last axis: y = x / max(‖x‖₂, eps). eps = 0 gives MASt3R's plain
// x / ‖x‖ (a zero row then yields NaN, as in the reference). One workgroup per row, fp32 sum of
// squares; subgroupAdd then one shared slot per subgroup (any subgroup size).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer X { STORE_T x[]; };
layout(binding = 1) writeonly buffer Y { STORE_T y[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint cols;
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
  const float norm = sqrt(workgroup_sum(ss));
  const float inv = 1.0 / max(norm, p.eps);
  for (uint i = tid; i < p.cols; i += WG) y[base + i] = STORE_T(float(x[base + i]) * inv);
}
