#version 450
// Softmax over the last axis, numerically stable: y = exp(x − max) / Σ exp(x − max), in fp32;
// LOG_SOFTMAX = 1: y = x − max − log Σ exp(x − max), which stays finite where softmax underflows.
// One workgroup per row (but WIDE = 2). Reductions: subgroup op, then one shared slot per subgroup
// in a fixed order (any subgroup size). Three paths, chosen on the host (gpu/ops/wide_access.h):
//   WIDE = 1: the row is read once, in 16-byte words (wide_io.glsl), and held in registers (WORDS
//             words per invocation) through the max, the sum and the write;
//   WIDE = 2: the same with one row per subgroup (the workgroup holds gl_NumSubgroups rows): the
//             reductions are subgroup operations, no barriers. The host picks it only where the
//             subgroup size is fixed and WORDS · size covers the row;
//   WIDE = 0: any row length; three passes over the row (max, sum, write).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "wide_io.glsl"

#ifndef LOG_SOFTMAX
#define LOG_SOFTMAX 0
#endif

// From the row's Σ exp(x − max), once per row: 1 / Σ (softmax) or log Σ (log-softmax).
float row_norm(float total) {
  return LOG_SOFTMAX != 0 ? log(total) : 1.0 / total;
}
// An element's output from its logit, the row max and row_norm.
float activate(float v, float m, float norm) {
  return LOG_SOFTMAX != 0 ? (v - m) - norm : exp(v - m) * norm;
}

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint WORDS = 1;  // words of the row per invocation (WIDE = 1)
layout(constant_id = 2) const uint WIDE = 0;   // 0, 1 or 2: see above
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer X { STORE_T x[]; };
layout(binding = 0) readonly buffer XW { uvec4 xw[]; };
layout(binding = 1) writeonly buffer Y { STORE_T y[]; };
layout(binding = 1) writeonly buffer YW { uvec4 yw[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint cols;
} p;

#include "workgroup_reduce.glsl"

// The max and the sum over the invocations that share a row.
float row_max(float v) {
  return WIDE == 2 ? subgroupMax(v) : workgroup_max(v);
}
float row_sum(float v) {
  return WIDE == 2 ? subgroupAdd(v) : workgroup_sum(v);
}

// Invocation `tid` of the `lanes` that share the row holds its words tid, tid + lanes, ...
void wide_row(uint row, uint tid, uint lanes) {
  const uint nw = p.cols / VW, base = row * nw;
  uvec4 words[WORDS];
  for (uint k = 0; k < WORDS; ++k) {
    const uint j = tid + k * lanes;
    words[k] = j < nw ? xw[base + j] : uvec4(0);
  }
  float f[VW];
  float m = uintBitsToFloat(0xff800000u);  // -inf
  for (uint k = 0; k < WORDS; ++k) {
    if (tid + k * lanes < nw) {
      unpack_word(words[k], f);
      for (uint i = 0; i < VW; ++i) m = max(m, f[i]);
    }
  }
  m = row_max(m);

  float s = 0.0;
  for (uint k = 0; k < WORDS; ++k) {
    if (tid + k * lanes < nw) {
      unpack_word(words[k], f);
      for (uint i = 0; i < VW; ++i) s += exp(f[i] - m);
    }
  }
  const float norm = row_norm(row_sum(s));

  for (uint k = 0; k < WORDS; ++k) {
    const uint j = tid + k * lanes;
    if (j >= nw) continue;
    unpack_word(words[k], f);
    for (uint i = 0; i < VW; ++i) f[i] = activate(f[i], m, norm);
    yw[base + j] = pack_word(f);
  }
}

void general_row(uint row, uint tid) {
  const uint base = row * p.cols;
  float m = uintBitsToFloat(0xff800000u);  // -inf
  for (uint i = tid; i < p.cols; i += WG) m = max(m, float(x[base + i]));
  m = workgroup_max(m);

  float s = 0.0;
  for (uint i = tid; i < p.cols; i += WG) s += exp(float(x[base + i]) - m);
  const float norm = row_norm(workgroup_sum(s));

  for (uint i = tid; i < p.cols; i += WG) y[base + i] = STORE_T(activate(float(x[base + i]), m, norm));
}

void main() {
  const uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (WIDE == 2) {
    const uint row = group * gl_NumSubgroups + gl_SubgroupID;
    if (row < p.rows) wide_row(row, gl_SubgroupInvocationID, gl_SubgroupSize);  // uniform per subgroup
    return;
  }
  if (group >= p.rows) return;  // uniform across the workgroup
  if (WIDE == 1) {
    wide_row(group, gl_LocalInvocationID.x, WG);
  } else {
    general_row(group, gl_LocalInvocationID.x);
  }
}
