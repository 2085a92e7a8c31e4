#version 450
// LayerNorm over the last axis: y = (x − mean) · rsqrt(var + eps) · weight + bias.
// One workgroup per row (with LOOP = 1, per row at a time). Statistics are fp32 and two-pass (the
// mean first, then the sum of squared deviations from it), and both passes work on x − x[0] (exact
// for nearby floats), so rows with a large offset and a small spread (mean ~100, std ~0.01) keep
// their precision: the naive E[x²] − E[x]² loses all of it, and even a plain two-pass mean carries
// an error of ~ulp(mean).
// Reductions: subgroupAdd, then one shared slot per subgroup, summed in a fixed order; no assumption
// on the subgroup size.
//
// Two paths, chosen on the host (gpu/ops/wide_access.h):
//   WIDE = 1: the row is read once, in 16-byte words (wide_io.glsl), and held in registers (WORDS
//             words per invocation) through both statistics passes and the write. With LOOP = 1
//             the grid is smaller than the rows and each workgroup loops over rows, its weight and
//             bias words loaded once and held (loading them with every row, early, measured slower);
//   WIDE = 0: any row length; each pass reads the row again (from cache for short rows).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"
#include "wide_io.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint WORDS = 1;  // words of the row per invocation (WIDE = 1)
layout(constant_id = 2) const uint WIDE = 0;
// WIDE = 1 only: 1 makes each workgroup loop over rows (stride: the grid), holding its affine
// words in registers across them.
layout(constant_id = 3) const uint LOOP = 0;
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer X { STORE_T x[]; };
layout(binding = 0) readonly buffer XW { uvec4 xw[]; };
layout(binding = 1) readonly buffer Wt { STORE_T weight[]; };  // x again when unused
layout(binding = 1) readonly buffer WtW { uvec4 weight_w[]; };
layout(binding = 2) readonly buffer Bs { STORE_T bias[]; };  // x again when unused
layout(binding = 2) readonly buffer BsW { uvec4 bias_w[]; };
layout(binding = 3) writeonly buffer Y { STORE_T y[]; };
layout(binding = 3) writeonly buffer YW { uvec4 yw[]; };

const uint kHasWeight = 1u, kHasBias = 2u;
layout(push_constant) uniform Push {
  uint rows;
  uint cols;
  uint flags;  // kHasWeight | kHasBias
  float eps;
} p;

#include "workgroup_reduce.glsl"

void wide_row(uint row, uint tid, uvec4 held_w[WORDS], uvec4 held_b[WORDS]) {
  const uint nw = p.cols / VW, base = row * nw;
  uvec4 words[WORDS];
  for (uint k = 0; k < WORDS; ++k) {
    const uint j = tid + k * WG;
    words[k] = j < nw ? xw[base + j] : uvec4(0);
  }
  const float shift = float(x[row * p.cols]);
  float f[VW];
  float s = 0.0;
  for (uint k = 0; k < WORDS; ++k) {
    if (tid + k * WG < nw) {
      unpack_word(words[k], f);
      for (uint i = 0; i < VW; ++i) s += f[i] - shift;
    }
  }
  const float mean = workgroup_sum(s) / float(p.cols);  // of x − shift

  float ss = 0.0;
  for (uint k = 0; k < WORDS; ++k) {
    if (tid + k * WG < nw) {
      unpack_word(words[k], f);
      for (uint i = 0; i < VW; ++i) {
        const float d = (f[i] - shift) - mean;
        ss += d * d;
      }
    }
  }
  const float rstd = inversesqrt(workgroup_sum(ss) / float(p.cols) + p.eps);

  const bool has_w = (p.flags & kHasWeight) != 0u, has_b = (p.flags & kHasBias) != 0u;
  for (uint k = 0; k < WORDS; ++k) {
    const uint j = tid + k * WG;
    if (j >= nw) continue;
    unpack_word(words[k], f);
    for (uint i = 0; i < VW; ++i) f[i] = ((f[i] - shift) - mean) * rstd;
    float t[VW];
    if (has_w) {
      unpack_word(LOOP == 1 ? held_w[k] : weight_w[j], t);
      for (uint i = 0; i < VW; ++i) f[i] *= t[i];
    }
    if (has_b) {
      unpack_word(LOOP == 1 ? held_b[k] : bias_w[j], t);
      for (uint i = 0; i < VW; ++i) f[i] += t[i];
    }
    yw[base + j] = pack_word(f);
  }
}

void general_row(uint row, uint tid) {
  const uint base = row * p.cols;
  const float shift = float(x[base]);
  float s = 0.0;
  for (uint i = tid; i < p.cols; i += WG) s += float(x[base + i]) - shift;
  const float mean = workgroup_sum(s) / float(p.cols);  // of x − shift

  float ss = 0.0;
  for (uint i = tid; i < p.cols; i += WG) {
    const float d = (float(x[base + i]) - shift) - mean;
    ss += d * d;
  }
  const float rstd = inversesqrt(workgroup_sum(ss) / float(p.cols) + p.eps);

  const bool has_w = (p.flags & kHasWeight) != 0u, has_b = (p.flags & kHasBias) != 0u;
  for (uint i = tid; i < p.cols; i += WG) {
    float v = ((float(x[base + i]) - shift) - mean) * rstd;
    if (has_w) v *= float(weight[i]);
    if (has_b) v += float(bias[i]);
    y[base + i] = STORE_T(v);
  }
}

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= p.rows) return;  // uniform across the workgroup
  const uint tid = gl_LocalInvocationID.x;
  if (WIDE == 0) {
    general_row(row, tid);
    return;
  }
  uvec4 held_w[WORDS], held_b[WORDS];
  if (LOOP == 1) {
    const uint nw = p.cols / VW;
    const bool has_w = (p.flags & kHasWeight) != 0u, has_b = (p.flags & kHasBias) != 0u;
    for (uint k = 0; k < WORDS; ++k) {
      const uint j = tid + k * WG;
      held_w[k] = j < nw && has_w ? weight_w[j] : uvec4(0);
      held_b[k] = j < nw && has_b ? bias_w[j] : uvec4(0);
    }
    const uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
    for (uint r = row; r < p.rows; r += groups) wide_row(r, tid, held_w, held_b);
  } else {
    wide_row(row, tid, held_w, held_b);
  }
}
