#version 450
// Batched GEMM with fused epilogue on tensor cores (VK_NV_cooperative_matrix), fp16 storage or
// fp32 storage split into fp16 parts (DTYPE_F16=0, gemm_io.glsl), fp32 accumulation: the same
// operation, bindings and push constants as matmul.comp; the tile loop is gemm_coopmat.glsl.
// VEC_A / VEC_B select 16-byte global loads, which the host enables only when the contiguous
// extent, leading dimension, batch stride and offset of that operand are multiples of 8 elements;
// otherwise 8 bounds-checked scalar loads build each vector.
#include "common.glsl"
#include "gemm_epilogue.glsl"
#include "gemm_io.glsl"
#include "rope.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 8) const bool TRANS_A = false;
layout(constant_id = 9) const bool TRANS_B = false;
layout(constant_id = 10) const bool VEC_A = false;
layout(constant_id = 11) const bool VEC_B = false;
// 16-byte epilogue stores (gemm_store8): the host sets it when ldc, the batch stride of C and the
// element offsets of C, the residual and a per-column bias are multiples of 8.
layout(constant_id = 12) const bool VEC_C = false;
// MASt3R's 2-D RoPE on the first rope_cols columns (heads of 64), after the bias (rope.glsl, as
// rope2d.comp, on the fp32 values before their fp16 rounding). The host sets it for one-dispatch,
// unsplit GEMMs without activation, residual or beta.
layout(constant_id = 13) const bool ROPE = false;
// Whole tiles (M, N and K multiples of BM, BN and BK) with VEC_A and VEC_B: the loads of the tile
// loop skip their bounds checks.
layout(constant_id = 14) const bool ALIGNED = false;

layout(binding = 0) readonly buffer BufA { STORE_T a[]; };
layout(binding = 0) readonly buffer BufA4 { GEMM_WORD a4[]; };
layout(binding = 1) readonly buffer BufB { STORE_T b[]; };
layout(binding = 1) readonly buffer BufB4 { GEMM_WORD b4[]; };
layout(binding = 2) buffer BufC { STORE_T c[]; };
layout(binding = 2) buffer BufC4 { GEMM_WORD c4[]; };
layout(binding = 3) readonly buffer BufBias { STORE_T bias[]; };
layout(binding = 3) readonly buffer BufBias4 { GEMM_WORD bias4[]; };
layout(binding = 4) readonly buffer BufR { STORE_T res[]; };
layout(binding = 4) readonly buffer BufR4 { GEMM_WORD res4[]; };

// Mirrored by MatmulPush in gpu/ops/matmul.cpp (same as matmul.comp).
layout(push_constant) uniform Push {
  uint m, n, k;
  uint lda, ldb, ldc;
  uint stride_a, stride_b, stride_c;
  uint off_a, off_b, off_c, off_r, off_bias;
  float alpha, beta;
  uint flags;
  uint rope_cols, rope_tokens, rope_grid_w;
  float rope_base;
} p;

#define GEMM_M p.m
#define GEMM_N p.n
#define GEMM_K p.k
#define A_COLMAJOR TRANS_A
#define B_COLMAJOR TRANS_B

GemmLoad8 gemm_load_a8(uint bz, uint row, uint col) {
  if (ALIGNED) return GEMM_WORDS_LOAD8(a4, p.off_a + bz * p.stride_a + row * p.lda + col);
  const uint rows = TRANS_A ? p.k : p.m, cols = TRANS_A ? p.m : p.k;
  if (row >= rows || col >= cols) return gemm_zero_load8();
  const uint base = p.off_a + bz * p.stride_a + row * p.lda + col;
  if (VEC_A) return GEMM_WORDS_LOAD8(a4, base);
  STORE_T v[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    v[e] = STORE_T(0.0);
    if (col + e < cols) v[e] = a[base + e];
  }
  return gemm_pack_load8(v);
}

GemmLoad8 gemm_load_b8(uint bz, uint row, uint col) {
  if (ALIGNED) return GEMM_WORDS_LOAD8(b4, p.off_b + bz * p.stride_b + row * p.ldb + col);
  const uint rows = TRANS_B ? p.n : p.k, cols = TRANS_B ? p.k : p.n;
  if (row >= rows || col >= cols) return gemm_zero_load8();
  const uint base = p.off_b + bz * p.stride_b + row * p.ldb + col;
  if (VEC_B) return GEMM_WORDS_LOAD8(b4, base);
  STORE_T v[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    v[e] = STORE_T(0.0);
    if (col + e < cols) v[e] = b[base + e];
  }
  return gemm_pack_load8(v);
}

void gemm_store(uint bz, uint m, uint n, float acc) {
  const uint ci = bz * p.stride_c + m * p.ldc + n;
  float v = p.alpha * acc;
  if ((p.flags & GEMM_FLAG_BETA) != 0u) v += p.beta * float(c[p.off_c + ci]);
  if ((p.flags & GEMM_FLAG_BIAS) != 0u) {
    v += float(bias[p.off_bias + ((p.flags & GEMM_FLAG_BIAS_PER_ROW) != 0u ? m : n)]);
  }
  const float r = (p.flags & GEMM_FLAG_RESIDUAL) != 0u ? float(res[p.off_r + ci]) : 0.0;
  c[p.off_c + ci] = STORE_T(gemm_epilogue_out(v, r, p.flags));
}

#define GEMM_STORE8 VEC_C
// The residual ahead of the epilogue (gemm_coopmat.glsl), in fp16: fp32's would double the registers.
#define GEMM_ROW8_PREFETCH (VEC_C && GEMM_SPLIT == 0)
GemmLoad8 gemm_row8_prefetch(uint bz, uint m, uint n) {
  if ((p.flags & GEMM_FLAG_RESIDUAL) == 0u || m >= p.m || n + 8u > p.n) return gemm_zero_load8();
  return GEMM_WORDS_LOAD8(res4, p.off_r + bz * p.stride_c + m * p.ldc + n);
}

// A row of 8 columns with the residual's values `rv` (zeros without one).
void gemm_store8_with(uint bz, uint m, uint n, float acc[8], float rv[8]) {
  const uint ci = bz * p.stride_c + m * p.ldc + n;
  const bool beta = (p.flags & GEMM_FLAG_BETA) != 0u, has_bias = (p.flags & GEMM_FLAG_BIAS) != 0u;
  const bool bias_row = (p.flags & GEMM_FLAG_BIAS_PER_ROW) != 0u;
  // Every load first, so that they are in flight together.
  float cv[8], bv[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) cv[e] = 0.0, bv[e] = 0.0;
  if (beta) GEMM_READ8(c4, p.off_c + ci, cv);
  if (has_bias && !bias_row) GEMM_READ8(bias4, p.off_bias + n, bv);
  const float brow = has_bias && bias_row ? float(bias[p.off_bias + m]) : 0.0;
  float v[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    float x = p.alpha * acc[e];
    if (beta) x += p.beta * cv[e];
    if (has_bias) x += bias_row ? brow : bv[e];
    v[e] = gemm_epilogue_out(x, rv[e], p.flags);
  }
  GEMM_WRITE8(c4, p.off_c + ci, v);
}

void gemm_store8(uint bz, uint m, uint n, float acc[8]) {
  float rv[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) rv[e] = 0.0;
  if ((p.flags & GEMM_FLAG_RESIDUAL) != 0u) GEMM_READ8(res4, p.off_r + bz * p.stride_c + m * p.ldc + n, rv);
  gemm_store8_with(bz, m, n, acc, rv);
}

void gemm_store8_prefetched(uint bz, uint m, uint n, float acc[8], GemmLoad8 pre) {
  float rv[8];
  gemm_load8_floats(pre, rv);
  gemm_store8_with(bz, m, n, acc, rv);
}

// Columns n.. of row m: 16-byte words where VEC_C allows, otherwise element by element with every
// load (C for beta, the bias, the residual) before the first store.
void gemm_store_row8(uint bz, uint m, uint n, float acc[8]) {
  const uint count = min(8u, p.n - n);
  if (VEC_C && count == 8u) {
    gemm_store8(bz, m, n, acc);
    return;
  }
  const uint ci = bz * p.stride_c + m * p.ldc + n;
  const bool beta = (p.flags & GEMM_FLAG_BETA) != 0u, has_bias = (p.flags & GEMM_FLAG_BIAS) != 0u;
  const bool bias_row = (p.flags & GEMM_FLAG_BIAS_PER_ROW) != 0u, residual = (p.flags & GEMM_FLAG_RESIDUAL) != 0u;
  float cv[8], bv[8], rv[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    const bool inside = e < count;
    cv[e] = beta && inside ? float(c[p.off_c + ci + e]) : 0.0;
    bv[e] = has_bias && inside ? float(bias[p.off_bias + (bias_row ? m : n + e)]) : 0.0;
    rv[e] = residual && inside ? float(res[p.off_r + ci + e]) : 0.0;
  }
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    if (e >= count) continue;
    float v = p.alpha * acc[e];
    if (beta) v += p.beta * cv[e];
    if (has_bias) v += bv[e];
    c[p.off_c + ci + e] = STORE_T(gemm_epilogue_out(v, rv[e], p.flags));
  }
}

#define GEMM_PAIR_STORE ROPE
void gemm_store_pair(uint bz, uint m, uint n, float lo[8], float hi[8]) {
  if (n >= p.rope_cols) {
    // Past the rotated heads: plain rows, each only where it starts inside C (gemm_store_row8
    // takes n < N; at N = 200 the columns 208.. had wrapped into the next row).
    if (n < p.n) gemm_store_row8(bz, m, n, lo);
    if (n + 16u < p.n) gemm_store_row8(bz, m, n + 16u, hi);
    return;
  }
  // Columns n.. pair with n+16.. inside one half of a 64-column head: the first half rotates
  // with the token's row y, the second with its column x; j = n % 16 + e indexes ω_j.
  const uint token = m % p.rope_tokens;
  const float pos = float((n % 64u) < 32u ? token / p.rope_grid_w : token % p.rope_grid_w);
  const bool has_bias = (p.flags & GEMM_FLAG_BIAS) != 0u;
  float out_lo[8], out_hi[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    float a = p.alpha * lo[e], b = p.alpha * hi[e];
    if (has_bias) {
      a += float(bias[p.off_bias + n + e]);
      b += float(bias[p.off_bias + n + 16u + e]);
    }
    const vec2 r = rope_rotate(a, b, rope_theta(pos, p.rope_base, n % 16u + e, 16u));
    out_lo[e] = r.x;
    out_hi[e] = r.y;
  }
  const uint ci = p.off_c + bz * p.stride_c + m * p.ldc + n;
  if (VEC_C) {
    GEMM_WRITE8(c4, ci, out_lo);
    GEMM_WRITE8(c4, ci + 16u, out_hi);
  } else {
    [[unroll]] for (uint e = 0; e < 8u; ++e) {
      c[ci + e] = STORE_T(out_lo[e]);
      c[ci + 16u + e] = STORE_T(out_hi[e]);
    }
  }
}

#include "gemm_coopmat.glsl"
