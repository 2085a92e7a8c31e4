#version 450
// 2-D convolution as an implicit GEMM on tensor cores (VK_NV_cooperative_matrix), fp16 storage or
// fp32 storage split into fp16 parts (DTYPE_F16=0, gemm_io.glsl), fp32 accumulation: the same
// operation, bindings, push constants and specialisation constants as conv2d.comp; the tile loop
// is gemm_coopmat.glsl. The weights [Cout][K] are the row-major A
// (16-byte loads when VEC_A: K and the weight offset are multiples of 8); B rows of 8 output
// pixels are gathered from the input with bounds checks (zero padding), with 16-byte loads when
// VEC_B (below).
#include "common.glsl"
#include "gemm_epilogue.glsl"
#include "gemm_io.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 8) const uint KH = 3;
layout(constant_id = 9) const uint KW = 3;
layout(constant_id = 10) const uint SH = 1;
layout(constant_id = 11) const uint SW = 1;
layout(constant_id = 12) const uint PH = 1;
layout(constant_id = 13) const uint PW = 1;
layout(constant_id = 14) const bool VEC_A = false;
// 16-byte epilogue stores (gemm_store8): the host sets it when Ho·Wo, the image stride and the
// element offsets of the output and the residual are multiples of 8.
layout(constant_id = 15) const bool VEC_OUT = false;
// 16-byte B loads (gemm_load_b8_words): the host sets it for stride 1 along x with the input's
// width kept (3 wide with padding 1, or 1 wide without), when the width, the image plane and the
// input offset are multiples of 8. The 8 output pixels of a B row then lie in one image row and
// read 8 consecutive input elements shifted by kx − PW ∈ {−1, 0, 1}. Gathered element by element
// (eight loads, each with its own bounds check and index arithmetic), the DPT's 3×3 convolutions
// ran at ~105 TFLOP/s on an H200 where the plain GEMMs reach 140–165.
layout(constant_id = 16) const bool VEC_B = false;
// K's order (conv2d.h, ConvWeightLayout). 0: K = (c, ky, kx), the weights [Cout][Cin][KH][KW] as
// PyTorch stores them. Otherwise Cin, and K = (ky, kx, c) with the weights [Cout][KH][KW][Cin]: with
// Cin a multiple of BK every slice of K is one tap, so the rows a subgroup loads share their shift
// and their row bounds check, and a word needs its neighbour's load for at most one side.
// (Unlike the plain GEMMs', these loads keep their bounds checks on whole tiles: skipping them
// measured 1–5 % slower for K tap by tap on an H200, heads 33.4 → 33.1 ms per call of 8 without.)
layout(constant_id = 17) const uint TAP_CIN = 0;

layout(binding = 0) readonly buffer BufIn { STORE_T inp[]; };
layout(binding = 0) readonly buffer BufIn4 { GEMM_WORD inp4[]; };
layout(binding = 1) readonly buffer BufW { STORE_T wgt[]; };
layout(binding = 1) readonly buffer BufW4 { GEMM_WORD wgt4[]; };
layout(binding = 2) writeonly buffer BufOut { STORE_T outp[]; };
layout(binding = 2) writeonly buffer BufOut4 { GEMM_WORD outp4[]; };
layout(binding = 3) readonly buffer BufBias { STORE_T bias[]; };
layout(binding = 4) readonly buffer BufR { STORE_T res[]; };
layout(binding = 4) readonly buffer BufR4 { GEMM_WORD res4[]; };

// Mirrored by Conv2dPush in gpu/ops/conv2d.cpp (same as conv2d.comp).
layout(push_constant) uniform Push {
  uint cin, h, w;
  uint cout, ho, wo;
  uint k;
  uint stride_in, stride_out;
  uint off_in, off_w, off_out, off_r, off_bias;
  uint flags;
} p;

#define GEMM_M p.cout
#define GEMM_N (p.ho * p.wo)
#define GEMM_K p.k
#define A_COLMAJOR false
#define B_COLMAJOR false

// The channel and tap of GEMM row k.
void conv_k(uint k, out uint c, out uint ky, out uint kx) {
  if (TAP_CIN != 0u) {
    const uint tap = k / TAP_CIN;
    c = k % TAP_CIN, ky = tap / KW, kx = tap % KW;
  } else {
    const uint r = k % (KH * KW);
    c = k / (KH * KW), ky = r / KW, kx = r % KW;
  }
}

// Weights: row = output channel, col = k.
GemmLoad8 gemm_load_a8(uint bz, uint row, uint col) {
  if (row >= p.cout || col >= p.k) return gemm_zero_load8();
  const uint base = p.off_w + row * p.k + col;
  if (VEC_A) return GEMM_WORDS_LOAD8(wgt4, base);
  STORE_T v[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    v[e] = STORE_T(0.0);
    if (col + e < p.k) v[e] = wgt[base + e];
  }
  return gemm_pack_load8(v);
}

// VEC_B: the 8 input elements of row k (channel c, tap ky, kx) under output pixels col..col + 7 of one image
// row, as one aligned 16-byte word moved by half a word (a funnel shift) where kx − PW = ±1: the
// element beyond the word comes from its neighbour, or is the zero padding at the row's ends.
GemmLoad8 gemm_load_b8_words(uint bz, uint row, uint col) {
  if (row >= p.k || col >= p.ho * p.wo) return gemm_zero_load8();
  uint c, ky, kx;
  conv_k(row, c, ky, kx);
  const uint oy = col / p.wo, ox = col % p.wo;
  const uint iy = oy * SH + ky - PH;  // wraps when negative
  if (iy >= p.h) return gemm_zero_load8();
  const uint at = p.off_in + bz * p.stride_in + c * p.h * p.w + iy * p.w + ox;  // element, a multiple of 8
#if GEMM_SPLIT
  GemmLoad8 v = GEMM_WORDS_LOAD8(inp4, at);
  if (KW == 3u) {
    // As below, one element to the left or right (no branches on kx).
    const float before = kx == 0u && ox > 0u ? inp[at - 1u] : 0.0;
    const float after = kx == 2u && ox + 8u < p.w ? inp[at + 8u] : 0.0;
    const GemmLoad8 left = GemmLoad8(vec4(before, v.lo.xyz), vec4(v.lo.w, v.hi.xyz));
    const GemmLoad8 right = GemmLoad8(vec4(v.lo.yzw, v.hi.x), vec4(v.hi.yzw, after));
    v = kx == 0u ? left : (kx == 2u ? right : v);
  }
  if ((p.flags & GEMM_FLAG_INPUT_RELU) != 0u) v = GemmLoad8(max(v.lo, vec4(0.0)), max(v.hi, vec4(0.0)));
  return v;
#else
  uvec4 v = inp4[at / 8u];
  if (KW == 3u) {
    // Without branches: the two B rows a subgroup loads usually differ in kx, so branches on it
    // ran both sides anyway (heads 36.5 → 36.0 ms at batch 8 on an H200 with selects). Elements
    // ox − 1 … ox + 6 (kx 0) or ox + 1 … ox + 8 (kx 2).
    const uint before = kx == 0u && ox > 0u ? inp4[at / 8u - 1u].w : 0u;
    const uint after = kx == 2u && ox + 8u < p.w ? inp4[at / 8u + 1u].x : 0u;
    const uvec4 left = uvec4((v.x << 16) | (before >> 16), (v.y << 16) | (v.x >> 16), (v.z << 16) | (v.y >> 16),
                             (v.w << 16) | (v.z >> 16));
    const uvec4 right = uvec4((v.x >> 16) | (v.y << 16), (v.y >> 16) | (v.z << 16), (v.z >> 16) | (v.w << 16),
                              (v.w >> 16) | (after << 16));
    v = kx == 0u ? left : (kx == 2u ? right : v);
  }
  if ((p.flags & GEMM_FLAG_INPUT_RELU) != 0u) {
    [[unroll]] for (uint i = 0; i < 4u; ++i) v[i] = packFloat2x16(max(unpackFloat2x16(v[i]), f16vec2(0.0)));
  }
  return v;
#endif
}

// Implicit im2col: row = k, col = first of 8 output pixels n = oy·Wo + ox.
GemmLoad8 gemm_load_b8(uint bz, uint row, uint col) {
  if (VEC_B) return gemm_load_b8_words(bz, row, col);
  STORE_T v[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) v[e] = STORE_T(0.0);
  const uint npix = p.ho * p.wo;
  if (row < p.k && col < npix) {
    uint c, ky, kx;
    conv_k(row, c, ky, kx);
    const uint plane = p.off_in + bz * p.stride_in + c * p.h * p.w;
    const bool relu = (p.flags & GEMM_FLAG_INPUT_RELU) != 0u;
    uint oy = col / p.wo, ox = col % p.wo;
    [[unroll]] for (uint e = 0; e < 8u; ++e) {
      const uint iy = oy * SH + ky - PH, ix = ox * SW + kx - PW;  // wraps when negative
      if (col + e < npix && iy < p.h && ix < p.w) {
        const STORE_T x = inp[plane + iy * p.w + ix];
        v[e] = relu ? max(x, STORE_T(0.0)) : x;
      }
      if (++ox == p.wo) {
        ox = 0u;
        ++oy;
      }
    }
  }
  return gemm_pack_load8(v);
}

void gemm_store(uint bz, uint m, uint n, float acc) {
  const uint oi = bz * p.stride_out + m * (p.ho * p.wo) + n;
  float v = acc;
  if ((p.flags & GEMM_FLAG_BIAS) != 0u) v += float(bias[p.off_bias + m]);
  const float r = (p.flags & GEMM_FLAG_RESIDUAL) != 0u ? float(res[p.off_r + oi]) : 0.0;
  outp[p.off_out + oi] = STORE_T(gemm_epilogue_out(v, r, p.flags));
}

#define GEMM_STORE8 VEC_OUT
void gemm_store8(uint bz, uint m, uint n, float acc[8]) {
  const uint oi = bz * p.stride_out + m * (p.ho * p.wo) + n;
  const bool residual = (p.flags & GEMM_FLAG_RESIDUAL) != 0u;
  const float b = (p.flags & GEMM_FLAG_BIAS) != 0u ? float(bias[p.off_bias + m]) : 0.0;
  float rv[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) rv[e] = 0.0;
  if (residual) GEMM_READ8(res4, p.off_r + oi, rv);
  float v[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) v[e] = gemm_epilogue_out(acc[e] + b, rv[e], p.flags);
  GEMM_WRITE8(outp4, p.off_out + oi, v);
}

// Columns n.. of output channel m: 16-byte words where VEC_OUT allows, otherwise element by
// element with every residual load before the first store.
void gemm_store_row8(uint bz, uint m, uint n, float acc[8]) {
  const uint count = min(8u, p.ho * p.wo - n);
  if (VEC_OUT && count == 8u) {
    gemm_store8(bz, m, n, acc);
    return;
  }
  const uint oi = bz * p.stride_out + m * (p.ho * p.wo) + n;
  const float b = (p.flags & GEMM_FLAG_BIAS) != 0u ? float(bias[p.off_bias + m]) : 0.0;
  float rv[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    rv[e] = (p.flags & GEMM_FLAG_RESIDUAL) != 0u && e < count ? float(res[p.off_r + oi + e]) : 0.0;
  }
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    if (e < count) outp[p.off_out + oi + e] = STORE_T(gemm_epilogue_out(acc[e] + b, rv[e], p.flags));
  }
}

#include "gemm_coopmat.glsl"
