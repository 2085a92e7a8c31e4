#version 450
// Fused scaled-dot-product attention, scalar path (every device; the reference for the
// cooperative-matrix path): out = softmax(q·kᵀ·scale)·v per (batch, head), flash-attention style —
// the Nq×Nk scores never reach memory. A workgroup owns BR query rows of one (batch, head) and walks
// the keys in tiles of BC staged through shared memory, keeping an online softmax (running max m,
// running sum l, rescaled accumulator) in fp32. TPR invocations share a query row: each computes
// BC/TPR scores of a tile and D/TPR output columns.
//
// q, k and v are read from token-major tensors (row stride and column offset in elements), so the
// packed qkv projection [B, N, 3·H·D] needs no copy; out is [B, Nq, H·D] with heads concatenated.
#include "common.glsl"

layout(constant_id = 0) const uint D = 64;    // head dim (multiple of 4, ≤ 128)
layout(constant_id = 1) const uint BR = 32;   // query rows per workgroup
layout(constant_id = 2) const uint BC = 32;   // keys per tile (multiple of TPR)
layout(constant_id = 3) const uint TPR = 4;   // invocations per query row
layout(constant_id = 4) const uint WG = 128;  // = BR · TPR
layout(local_size_x_id = 4) in;

layout(binding = 0) readonly buffer Q { STORE_T q[]; };
layout(binding = 1) readonly buffer K { STORE_T k[]; };
layout(binding = 2) readonly buffer V { STORE_T v[]; };
layout(binding = 3) writeonly buffer O { STORE_T o[]; };

layout(push_constant) uniform Push {
  uint nq, nk;  // tokens per batch item
  uint q_stride, q_col;
  uint k_stride, k_col;
  uint v_stride, v_col;
  uint o_stride;
  float scale_log2e;  // scale · log2(e): scores live in the exp2 domain
} p;

const uint DP = D + 1;        // padded rows: no bank conflicts across rows
const uint SP = BC + 1;
const uint OPT = (D + TPR - 1) / TPR;  // output columns per invocation
#define NEG_INF uintBitsToFloat(0xff800000u)

shared float q_s[BR * DP];
shared float k_s[BC * DP];
shared float v_s[BC * D];
shared float s_s[BR * SP];

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint r = tid / TPR, t = tid % TPR;
  const uint q0 = gl_WorkGroupID.x * BR;
  const uint head = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
  const uint q_base = b * p.nq * p.q_stride + p.q_col + head * D;
  const uint k_base = b * p.nk * p.k_stride + p.k_col + head * D;
  const uint v_base = b * p.nk * p.v_stride + p.v_col + head * D;

  for (uint idx = tid; idx < BR * D; idx += WG) {
    const uint row = idx / D, d = idx % D;
    q_s[row * DP + d] = q0 + row < p.nq ? float(q[q_base + (q0 + row) * p.q_stride + d]) : 0.0;
  }

  float m = NEG_INF, l = 0.0;
  float acc[OPT];
  for (uint i = 0; i < OPT; ++i) acc[i] = 0.0;

  for (uint k0 = 0; k0 < p.nk; k0 += BC) {
    barrier();  // the previous tile is consumed (and q_s is written, on the first pass)
    for (uint idx = tid; idx < BC * D; idx += WG) {
      const uint c = idx / D, d = idx % D;
      const bool valid = k0 + c < p.nk;
      k_s[c * DP + d] = valid ? float(k[k_base + (k0 + c) * p.k_stride + d]) : 0.0;
      v_s[c * D + d] = valid ? float(v[v_base + (k0 + c) * p.v_stride + d]) : 0.0;
    }
    barrier();

    for (uint c = t; c < BC; c += TPR) {
      float dot = 0.0;
      for (uint d = 0; d < D; ++d) dot += q_s[r * DP + d] * k_s[c * DP + d];
      s_s[r * SP + c] = k0 + c < p.nk ? dot * p.scale_log2e : NEG_INF;
    }
    barrier();

    // Every invocation of the row reads the whole score row: no further barrier is needed.
    float tile_max = NEG_INF;
    for (uint c = 0; c < BC; ++c) tile_max = max(tile_max, s_s[r * SP + c]);
    const float m_new = max(m, tile_max);  // finite: every tile holds at least one valid key
    const float alpha = exp2(m - m_new);   // 0 on the first tile (m = −inf)
    l *= alpha;
    for (uint i = 0; i < OPT; ++i) acc[i] *= alpha;
    for (uint c = 0; c < BC; ++c) {
      const float pc = exp2(s_s[r * SP + c] - m_new);
      l += pc;
      for (uint i = 0; i < OPT; ++i) {
        const uint d = t + i * TPR;
        if (d < D) acc[i] += pc * v_s[c * D + d];
      }
    }
    m = m_new;
  }

  if (q0 + r < p.nq) {
    const float inv_l = 1.0 / l;
    const uint o_base = (b * p.nq + q0 + r) * p.o_stride + head * D;
    for (uint i = 0; i < OPT; ++i) {
      const uint d = t + i * TPR;
      if (d < D) o[o_base + d] = STORE_T(acc[i] * inv_l);
    }
  }
}
