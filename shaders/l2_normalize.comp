#version 450
// L2 normalisation over the last axis: y = x / max(‖x‖₂, eps). eps = 0 gives MASt3R's plain
// x / ‖x‖ (a zero row then yields NaN, as in the reference). One workgroup per row, fp32 sum of
// squares; subgroupAdd then one shared slot per subgroup (any subgroup size). Two paths, chosen on
// the host (gpu/ops/wide_access.h):
//   WIDE = 1: the row is read once, in 16-byte words (wide_io.glsl), held in registers (WORDS words
//             per invocation) from the sum of squares to the write;
//   WIDE = 0: any row length; two passes over the row.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "wide_io.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint WORDS = 1;  // words of the row per invocation (WIDE = 1)
layout(constant_id = 2) const uint WIDE = 0;
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer X { STORE_T x[]; };
layout(binding = 0) readonly buffer XW { uvec4 xw[]; };
layout(binding = 1) writeonly buffer Y { STORE_T y[]; };
layout(binding = 1) writeonly buffer YW { uvec4 yw[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint cols;
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
  const float inv = 1.0 / max(sqrt(workgroup_sum(ss)), p.eps);
  for (uint k = 0; k < WORDS; ++k) {
    const uint j = tid + k * WG;
    if (j >= nw) continue;
    unpack_word(words[k], f);
    for (uint i = 0; i < VW; ++i) f[i] *= inv;
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
  const float inv = 1.0 / max(sqrt(workgroup_sum(ss)), p.eps);
  for (uint i = tid; i < p.cols; i += WG) y[base + i] = STORE_T(float(x[base + i]) * inv);
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
