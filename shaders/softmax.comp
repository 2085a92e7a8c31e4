#version 450
// Softmax over the last axis, numerically stable: y = exp(x − max) / Σ exp(x − max), in fp32.
// One workgroup per row, three passes over the row (max, sum, write); any row length. Reductions:
// subgroup op, then one shared slot per subgroup in a fixed order (any subgroup size).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer X { STORE_T x[]; };
layout(binding = 1) writeonly buffer Y { STORE_T y[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint cols;
} p;

shared float partial[WG];

float workgroup_max(float v) {
  v = subgroupMax(v);
  if (subgroupElect()) partial[gl_SubgroupID] = v;
  barrier();
  float m = partial[0];
  for (uint i = 1; i < gl_NumSubgroups; ++i) m = max(m, partial[i]);
  barrier();
  return m;
}

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

  float m = uintBitsToFloat(0xff800000u);  // -inf
  for (uint i = tid; i < p.cols; i += WG) m = max(m, float(x[base + i]));
  m = workgroup_max(m);

  float s = 0.0;
  for (uint i = tid; i < p.cols; i += WG) s += exp(float(x[base + i]) - m);
  const float inv = 1.0 / workgroup_sum(s);

  for (uint i = tid; i < p.cols; i += WG) y[base + i] = STORE_T(exp(float(x[base + i]) - m) * inv);
}
