#version 450
// 2-D convolution as an implicit GEMM on tensor cores (VK_NV_cooperative_matrix), fp16 storage,
// fp32 accumulation: the same operation, bindings, push constants and specialisation constants
// as conv2d.comp; the tile loop is gemm_coopmat.glsl. The weights [Cout][K] are the row-major A
// (16-byte loads when VEC_A: K and the weight offset are multiples of 8); B rows of 8 output
// pixels are gathered from the input with bounds checks (zero padding), with 16-byte loads when
// VEC_B (below).
#include "common.glsl"
#include "gemm_epilogue.glsl"
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

layout(binding = 0) readonly buffer BufIn { float16_t inp[]; };
layout(binding = 0) readonly buffer BufIn4 { uvec4 inp4[]; };
layout(binding = 1) readonly buffer BufW { float16_t wgt[]; };
layout(binding = 1) readonly buffer BufW4 { uvec4 wgt4[]; };
layout(binding = 2) writeonly buffer BufOut { float16_t outp[]; };
layout(binding = 2) writeonly buffer BufOut4 { uvec4 outp4[]; };
layout(binding = 3) readonly buffer BufBias { float16_t bias[]; };
layout(binding = 4) readonly buffer BufR { float16_t res[]; };
layout(binding = 4) readonly buffer BufR4 { uvec4 res4[]; };

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

uvec4 pack8(float16_t v[8]) {
  return uvec4(packFloat2x16(f16vec2(v[0], v[1])), packFloat2x16(f16vec2(v[2], v[3])),
               packFloat2x16(f16vec2(v[4], v[5])), packFloat2x16(f16vec2(v[6], v[7])));
}

// Weights: row = output channel, col = k.
uvec4 gemm_load_a8(uint bz, uint row, uint col) {
  if (row >= p.cout || col >= p.k) return uvec4(0u);
  const uint base = p.off_w + row * p.k + col;
  if (VEC_A) return wgt4[base / 8u];
  float16_t v[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    v[e] = float16_t(0.0);
    if (col + e < p.k) v[e] = wgt[base + e];
  }
  return pack8(v);
}

// VEC_B: the 8 input elements of row k (channel c, tap ky, kx) under output pixels col..col + 7 of one image
// row, as one aligned 16-byte word moved by half a word (a funnel shift) where kx − PW = ±1: the
// element beyond the word comes from its neighbour, or is the zero padding at the row's ends.
uvec4 gemm_load_b8_words(uint bz, uint row, uint col) {
  if (row >= p.k || col >= p.ho * p.wo) return uvec4(0u);
  uint c, ky, kx;
  conv_k(row, c, ky, kx);
  const uint oy = col / p.wo, ox = col % p.wo;
  const uint iy = oy * SH + ky - PH;  // wraps when negative
  if (iy >= p.h) return uvec4(0u);
  const uint at = (p.off_in + bz * p.stride_in + c * p.h * p.w + iy * p.w + ox) / 8u;
  uvec4 v = inp4[at];
  if (KW == 3u) {
    // Without branches: the two B rows a subgroup loads usually differ in kx, so branches on it
    // ran both sides anyway (heads 36.5 → 36.0 ms at batch 8 on an H200 with selects). Elements
    // ox − 1 … ox + 6 (kx 0) or ox + 1 … ox + 8 (kx 2).
    const uint before = kx == 0u && ox > 0u ? inp4[at - 1u].w : 0u;
    const uint after = kx == 2u && ox + 8u < p.w ? inp4[at + 1u].x : 0u;
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
}

// Implicit im2col: row = k, col = first of 8 output pixels n = oy·Wo + ox.
uvec4 gemm_load_b8(uint bz, uint row, uint col) {
  if (VEC_B) return gemm_load_b8_words(bz, row, col);
  float16_t v[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) v[e] = float16_t(0.0);
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
        float16_t x = inp[plane + iy * p.w + ix];
        v[e] = relu ? max(x, float16_t(0.0)) : x;
      }
      if (++ox == p.wo) {
        ox = 0u;
        ++oy;
      }
    }
  }
  return pack8(v);
}

void gemm_store(uint bz, uint m, uint n, float acc) {
  const uint oi = bz * p.stride_out + m * (p.ho * p.wo) + n;
  float v = acc;
  if ((p.flags & GEMM_FLAG_BIAS) != 0u) v += float(bias[p.off_bias + m]);
  const float r = (p.flags & GEMM_FLAG_RESIDUAL) != 0u ? float(res[p.off_r + oi]) : 0.0;
  outp[p.off_out + oi] = float16_t(gemm_act_residual_fp16_out(v, r, p.flags));
}

#define GEMM_STORE8 VEC_OUT
void gemm_store8(uint bz, uint m, uint n, float acc[8]) {
  const uint oi = bz * p.stride_out + m * (p.ho * p.wo) + n;
  const bool residual = (p.flags & GEMM_FLAG_RESIDUAL) != 0u;
  const float b = (p.flags & GEMM_FLAG_BIAS) != 0u ? float(bias[p.off_bias + m]) : 0.0;
  const uvec4 rw = residual ? res4[(p.off_r + oi) / 8u] : uvec4(0u);
  float v[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    const float r = residual ? float(unpackFloat2x16(rw[e / 2u])[e % 2u]) : 0.0;
    v[e] = gemm_act_residual_fp16_out(acc[e] + b, r, p.flags);
  }
  outp4[(p.off_out + oi) / 8u] = uvec4(packFloat2x16(f16vec2(v[0], v[1])), packFloat2x16(f16vec2(v[2], v[3])),
                                       packFloat2x16(f16vec2(v[4], v[5])), packFloat2x16(f16vec2(v[6], v[7])));
}

#include "gemm_coopmat.glsl"
