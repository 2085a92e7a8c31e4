#version 450
// RMSNorm over the last axis: y = x · rsqrt(mean(x²) + eps) · weight. One workgroup per row, fp32
// statistics; subgroupAdd then one shared slot per subgroup (any subgroup size). Two paths, chosen
// on the host (gpu/ops/wide_access.h):
//   WIDE = 1: the row is read once, in 16-byte words (wide_io.glsl), held in registers (WORDS words
//             per invocation) from the sum of squares to the write;
//   WIDE = 0: any row length; two passes over the row.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "wide_io.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint WORDS = 1;  // words of the row per invocation (WIDE = 1)
layout(constant_id = 2) const uint WIDE = 0;
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer X { STORE_T x[]; };
layout(binding = 0) readonly buffer XW { uvec4 xw[]; };
layout(binding = 1) readonly buffer Wt { STORE_T weight[]; };  // x again when unused
layout(binding = 1) readonly buffer WtW { uvec4 weight_w[]; };
layout(binding = 2) writeonly buffer Y { STORE_T y[]; };
layout(binding = 2) writeonly buffer YW { uvec4 yw[]; };

const uint kHasWeight = 1u;
layout(push_constant) uniform Push {
  uint rows;
  uint cols;
  uint flags;  // kHasWeight
  float eps;
} p;

#include "workgroup_reduce.glsl"

void wide_row(uint row, uint tid) {
  const uint nw = p.cols / VW, base = row * nw;
  uvec4 words[WORDS];
  for (uint k = 0; k < WORDS; ++k) {
    const uint j = tid + k * WG;
    words[k] = j < nw ? xw[base + j] : uvec4(0);
  }
  float f[VW];
  float ss = 0.0;
  for (uint k = 0; k < WORDS; ++k) {
    if (tid + k * WG < nw) {
      unpack_word(words[k], f);
      for (uint i = 0; i < VW; ++i) ss += f[i] * f[i];
    }
  }
  const float r = inversesqrt(workgroup_sum(ss) / float(p.cols) + p.eps);
  const bool has_w = (p.flags & kHasWeight) != 0u;
  for (uint k = 0; k < WORDS; ++k) {
    const uint j = tid + k * WG;
    if (j >= nw) continue;
    unpack_word(words[k], f);
    for (uint i = 0; i < VW; ++i) f[i] *= r;
    if (has_w) {
      float t[VW];
      unpack_word(weight_w[j], t);
      for (uint i = 0; i < VW; ++i) f[i] *= t[i];
    }
    yw[base + j] = pack_word(f);
  }
}

void general_row(uint row, uint tid) {
  const uint base = row * p.cols;
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

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.rows) return;  // uniform across the workgroup
  if (WIDE != 0) {
    wide_row(row, gl_LocalInvocationID.x);
  } else {
    general_row(row, gl_LocalInvocationID.x);
  }
}
