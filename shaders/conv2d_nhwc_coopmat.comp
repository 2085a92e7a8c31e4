#version 450
// 2-D convolution of channels-last maps as an implicit GEMM on tensor cores (gemm_coopmat.glsl;
// fp16 storage, or fp32 split into fp16 parts: gemm_io.glsl): input [B][H][W][Cin], weights
// [Cout][KH][KW][Cin], output and residual [B][Ho][Wo][Cout]. Same operation, bindings, push and
// constants 8..13 as conv2d_nhwc.comp (conv2d_nhwc_gemm.glsl), and IN_PLANAR too. A(m, k) is gathered from the input: with Cin a multiple of 8 (VEC_A) the 8 values of a
// load are 8 consecutive channels of one input pixel, one 16-byte load, whatever the map's width
// (the NCHW kernel, conv2d_coopmat.comp, gathers element by element where the width is not a
// multiple of 8: ResNet's 28×28, 14×14 and 7×7 maps). B is the weights as stored ([N][K], column
// major for the core); C rows are output pixels, so the epilogue's 8 columns are 8 channels of
// one pixel, 16 contiguous bytes.
#include "common.glsl"
#include "gemm_epilogue.glsl"
#include "gemm_io.glsl"
#extension GL_EXT_control_flow_attributes : require

// 16-byte A loads: Cin and the input's offset are multiples of 8.
layout(constant_id = 14) const bool VEC_A = false;
// 16-byte B loads: K and the weights' offset are multiples of 8.
layout(constant_id = 15) const bool VEC_B = false;
// 16-byte epilogue words: Cout and the output's and residual's offsets are multiples of 8.
layout(constant_id = 16) const bool VEC_OUT = false;
// The input planar, [B][Cin][H][W] (no VEC_A): a network's first convolution reads its NCHW input
// as it is, element by element as it would gather a few channels anyway, with no transpose before.
layout(constant_id = 17) const bool IN_PLANAR = false;

layout(binding = 0) readonly buffer BufIn4 { GEMM_WORD inp4[]; };
layout(binding = 1) readonly buffer BufW4 { GEMM_WORD wgt4[]; };
layout(binding = 2) writeonly buffer BufOut4 { GEMM_WORD outp4[]; };
layout(binding = 3) readonly buffer BufBias4 { GEMM_WORD bias4[]; };
layout(binding = 4) readonly buffer BufR4 { GEMM_WORD res4[]; };
#include "conv2d_nhwc_gemm.glsl"
#define A_COLMAJOR false
#define B_COLMAJOR true

// A: row = output pixel, col = k (a multiple of 8).
GemmLoad8 gemm_load_a8(uint bz, uint row, uint col) {
  if (row >= GEMM_M || col >= p.k) return gemm_zero_load8();
  uint image;
  int iy0, ix0;
  conv_pixel(row, image, iy0, ix0);
  uint tap = conv_tap(col), c = col - tap * p.cin;
  if (VEC_A) {
    const int at = conv_input_at(tap, c, image, iy0, ix0);
    return at < 0 ? gemm_zero_load8() : GEMM_WORDS_LOAD8(inp4, uint(at));
  }
  STORE_T v[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) {  // (tap, c) stepped, not divided, from k to k + 1
    v[e] = STORE_T(0.0);
    if (col + e < p.k) {
      const int at = conv_input_at(tap, c, image, iy0, ix0);
      if (at >= 0) v[e] = inp[at];
    }
    if (++c == p.cin) c = 0u, ++tap;
  }
  return gemm_pack_load8(v);
}

// B as stored: row = output channel, col = k.
GemmLoad8 gemm_load_b8(uint bz, uint row, uint col) {
  if (row >= p.cout || col >= p.k) return gemm_zero_load8();
  const uint base = p.off_w + row * p.k + col;
  if (VEC_B) return GEMM_WORDS_LOAD8(wgt4, base);
  STORE_T v[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    v[e] = STORE_T(0.0);
    if (col + e < p.k) v[e] = wgt[base + e];
  }
  return gemm_pack_load8(v);
}

void gemm_store(uint bz, uint m, uint n, float acc) {
  const uint oi = m * p.cout + n;
  float v = acc;
  if ((p.flags & GEMM_FLAG_BIAS) != 0u) v += float(bias[p.off_bias + n]);
  const float r = (p.flags & GEMM_FLAG_RESIDUAL) != 0u ? float(res[p.off_r + oi]) : 0.0;
  outp[p.off_out + oi] = STORE_T(gemm_epilogue_out(v, r, p.flags));
}

#define GEMM_STORE8 VEC_OUT
// The residual ahead of the epilogue (gemm_coopmat.glsl), in fp16: fp32's would double the registers.
#define GEMM_ROW8_PREFETCH (VEC_OUT && GEMM_SPLIT == 0)
GemmLoad8 gemm_row8_prefetch(uint bz, uint m, uint n) {
  if ((p.flags & GEMM_FLAG_RESIDUAL) == 0u || m >= GEMM_M || n + 8u > p.cout) return gemm_zero_load8();
  return GEMM_WORDS_LOAD8(res4, p.off_r + m * p.cout + n);
}

// Channels n..n + 7 of pixel m with the residual's values `rv` (zeros without one).
void gemm_store8_with(uint m, uint n, float acc[8], float rv[8]) {
  float bv[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) bv[e] = 0.0;
  if ((p.flags & GEMM_FLAG_BIAS) != 0u) GEMM_READ8(bias4, p.off_bias + n, bv);
  float v[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) v[e] = gemm_epilogue_out(acc[e] + bv[e], rv[e], p.flags);
  GEMM_WRITE8(outp4, p.off_out + m * p.cout + n, v);
}

// Every load before the store.
void gemm_store8(uint bz, uint m, uint n, float acc[8]) {
  float rv[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) rv[e] = 0.0;
  if ((p.flags & GEMM_FLAG_RESIDUAL) != 0u) GEMM_READ8(res4, p.off_r + m * p.cout + n, rv);
  gemm_store8_with(m, n, acc, rv);
}

void gemm_store8_prefetched(uint bz, uint m, uint n, float acc[8], GemmLoad8 pre) {
  float rv[8];
  gemm_load8_floats(pre, rv);
  gemm_store8_with(m, n, acc, rv);
}

// Channels n.. of pixel m: 16-byte words where VEC_OUT allows, otherwise element by element with
// every load before the first store.
void gemm_store_row8(uint bz, uint m, uint n, float acc[8]) {
  const uint count = min(8u, p.cout - n);
  if (VEC_OUT && count == 8u) {
    gemm_store8(bz, m, n, acc);
    return;
  }
  const uint oi = m * p.cout + n;
  float bv[8], rv[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    bv[e] = (p.flags & GEMM_FLAG_BIAS) != 0u && e < count ? float(bias[p.off_bias + n + e]) : 0.0;
    rv[e] = (p.flags & GEMM_FLAG_RESIDUAL) != 0u && e < count ? float(res[p.off_r + oi + e]) : 0.0;
  }
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    if (e < count) outp[p.off_out + oi + e] = STORE_T(gemm_epilogue_out(acc[e] + bv[e], rv[e], p.flags));
  }
}

#include "gemm_coopmat.glsl"
