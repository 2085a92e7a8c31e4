#version 450
// Batched GEMM with fused epilogue, scalar path (every device):
//   C[b] = act(alpha·op(A[b])·op(B[b]) + beta·C[b] + bias) + R[b]
// op() transposes when TRANS_A / TRANS_B. Leading dimensions, batch strides (0 broadcasts) and
// element offsets come in the push constants; the tile loop is gemm_scalar.glsl.
// Bindings: 0 A, 1 B, 2 C, 3 bias (per column, or per row with GEMM_FLAG_BIAS_PER_ROW), 4 residual
// (laid out like C). Unused bindings get a dummy buffer and are never read.
#include "common.glsl"
#include "gemm_epilogue.glsl"
#extension GL_EXT_control_flow_attributes : require

// Transposes are flags (uniform branches) rather than specialisation constants: one pipeline per
// tile instead of four, which matters where pipeline creation is slow (lavapipe: ~1 s each).
#define TRANS_A ((p.flags & GEMM_FLAG_TRANS_A) != 0u)  // A stored [K][M] (lda >= M)
#define TRANS_B ((p.flags & GEMM_FLAG_TRANS_B) != 0u)  // B stored [N][K] (ldb >= K): nn.Linear weights

layout(binding = 0) readonly buffer BufA { STORE_T a[]; };
layout(binding = 0) readonly buffer BufA4 { STORE4_T a4[]; };
layout(binding = 1) readonly buffer BufB { STORE_T b[]; };
layout(binding = 1) readonly buffer BufB4 { STORE4_T b4[]; };
layout(binding = 2) buffer BufC { STORE_T c[]; };
layout(binding = 2) buffer BufC4 { STORE4_T c4[]; };
layout(binding = 3) readonly buffer BufBias { STORE_T bias[]; };
layout(binding = 4) readonly buffer BufR { STORE_T res[]; };
layout(binding = 4) readonly buffer BufR4 { STORE4_T res4[]; };

// Mirrored by MatmulPush in gpu/ops/matmul.cpp.
layout(push_constant) uniform Push {
  uint m, n, k;
  uint lda, ldb, ldc;
  uint stride_a, stride_b, stride_c;
  uint off_a, off_b, off_c, off_r, off_bias;
  float alpha, beta;
  uint flags;
} p;

#define GEMM_M p.m
#define GEMM_N p.n
#define GEMM_K p.k
#define A_K_CONTIGUOUS (!TRANS_A)
#define B_N_CONTIGUOUS (!TRANS_B)

// Element indices of A(m, k), B(k, n) and C(m, n) (C's without its offset).
uint a_at(uint bz, uint m, uint k) { return p.off_a + bz * p.stride_a + (TRANS_A ? k * p.lda + m : m * p.lda + k); }
uint b_at(uint bz, uint k, uint n) { return p.off_b + bz * p.stride_b + (TRANS_B ? n * p.ldb + k : k * p.ldb + n); }
uint c_at(uint bz, uint m, uint n) { return bz * p.stride_c + m * p.ldc + n; }

float gemm_load_a(uint bz, uint m, uint k) { return float(a[a_at(bz, m, k)]); }
float gemm_load_b(uint bz, uint k, uint n) { return float(b[b_at(bz, k, n)]); }
#define GEMM_LOAD_A4
vec4 gemm_load_a4(uint bz, uint m, uint k) { return vec4(a4[a_at(bz, m, k) / 4u]); }
#define GEMM_LOAD_B4
vec4 gemm_load_b4(uint bz, uint k, uint n) { return vec4(b4[b_at(bz, k, n) / 4u]); }

float bias_at(uint m, uint n) {
  return float(bias[p.off_bias + ((p.flags & GEMM_FLAG_BIAS_PER_ROW) != 0u ? m : n)]);
}

void gemm_store(uint bz, uint m, uint n, float acc) {
  const uint ci = c_at(bz, m, n);
  float v = p.alpha * acc;
  if ((p.flags & GEMM_FLAG_BETA) != 0u) v += p.beta * float(c[p.off_c + ci]);
  if ((p.flags & GEMM_FLAG_BIAS) != 0u) v += bias_at(m, n);
  const float r = (p.flags & GEMM_FLAG_RESIDUAL) != 0u ? float(res[p.off_r + ci]) : 0.0;
  c[p.off_c + ci] = STORE_T(gemm_act_residual(v, r, p.flags));
}

#define GEMM_STORE4
vec4 gemm_load_epilogue4(uint bz, uint m, uint n) {
  return (p.flags & GEMM_FLAG_RESIDUAL) != 0u ? vec4(res4[(p.off_r + c_at(bz, m, n)) / 4u]) : vec4(0.0);
}

void gemm_store4(uint bz, uint m, uint n, vec4 acc, vec4 r) {
  const uint ci = (p.off_c + c_at(bz, m, n)) / 4u;
  vec4 v = p.alpha * acc;
  if ((p.flags & GEMM_FLAG_BETA) != 0u) v += p.beta * vec4(c4[ci]);
  // One activation instantiated, not four.
  [[dont_unroll]] for (uint e = 0; e < 4u; ++e) {
    const float x = v[e] + ((p.flags & GEMM_FLAG_BIAS) != 0u ? bias_at(m, n + e) : 0.0);
    v[e] = gemm_act_residual(x, r[e], p.flags);
  }
  c4[ci] = STORE4_T(v);
}

#include "gemm_scalar.glsl"
