#version 450
// Batched GEMM with fused epilogue, scalar path (every device):
//   C[b] = act(alpha·op(A[b])·op(B[b]) + beta·C[b] + bias) + R[b]
// op() transposes when TRANS_A / TRANS_B. Leading dimensions, batch strides (0 broadcasts) and
// element offsets come in the push constants; the tile loop is gemm_scalar.glsl.
// Bindings: 0 A, 1 B, 2 C, 3 bias (per column, or per row with GEMM_FLAG_BIAS_PER_ROW), 4 residual
// (laid out like C). Unused bindings get a dummy buffer and are never read.
#include "common.glsl"
#include "gemm_epilogue.glsl"

// Transposes are flags (uniform branches) rather than specialisation constants: one pipeline per
// tile instead of four, which matters where pipeline creation is slow (lavapipe: ~1 s each).
#define TRANS_A ((p.flags & GEMM_FLAG_TRANS_A) != 0u)  // A stored [K][M] (lda >= M)
#define TRANS_B ((p.flags & GEMM_FLAG_TRANS_B) != 0u)  // B stored [N][K] (ldb >= K): nn.Linear weights

layout(binding = 0) readonly buffer BufA { STORE_T a[]; };
layout(binding = 1) readonly buffer BufB { STORE_T b[]; };
layout(binding = 2) buffer BufC { STORE_T c[]; };
layout(binding = 3) readonly buffer BufBias { STORE_T bias[]; };
layout(binding = 4) readonly buffer BufR { STORE_T res[]; };

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

float gemm_load_a(uint bz, uint m, uint k) {
  return float(a[p.off_a + bz * p.stride_a + (TRANS_A ? k * p.lda + m : m * p.lda + k)]);
}

float gemm_load_b(uint bz, uint k, uint n) {
  return float(b[p.off_b + bz * p.stride_b + (TRANS_B ? n * p.ldb + k : k * p.ldb + n)]);
}

void gemm_store(uint bz, uint m, uint n, float acc) {
  const uint ci = bz * p.stride_c + m * p.ldc + n;
  float v = p.alpha * acc;
  if ((p.flags & GEMM_FLAG_BETA) != 0u) v += p.beta * float(c[p.off_c + ci]);
  if ((p.flags & GEMM_FLAG_BIAS) != 0u) {
    v += float(bias[p.off_bias + ((p.flags & GEMM_FLAG_BIAS_PER_ROW) != 0u ? m : n)]);
  }
  const float r = (p.flags & GEMM_FLAG_RESIDUAL) != 0u ? float(res[p.off_r + ci]) : 0.0;
  c[p.off_c + ci] = STORE_T(gemm_act_residual(v, r, p.flags));
}

#include "gemm_scalar.glsl"
