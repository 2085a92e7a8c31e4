#version 450
// 2-D convolution of channels-last maps as an implicit GEMM, scalar path (every device): input
// [B][H][W][Cin], weights [Cout][KH][KW][Cin], output and residual [B][Ho][Wo][Cout]; zero padding;
// fused bias (per output channel), activation and residual:
//   out[b,y,x,o] = act(bias[o] + Σ_{i,j,c} W[o,i,j,c]·in[b, y·SH-PH+i, x·SW-PW+j, c]) + R[b,y,x,o]
// GEMM view (conv2d_nhwc_gemm.glsl): A(m, k) gathered from the input, B(k, n) the weights as
// stored ([N][K]). With Cin a multiple of 4 the core loads 4 channels of one input pixel at a time
// (one address computation, one 16-byte load in fp32), the weights 4 values of K at a time, and
// stores 4 output channels of a pixel at a time. conv2d_nhwc_coopmat.comp is the tensor-core form.
#include "common.glsl"
#include "gemm_epilogue.glsl"
#extension GL_EXT_control_flow_attributes : require

// The input planar, [B][Cin][H][W] (a network's NCHW input, read with no transpose before).
layout(constant_id = 14) const bool IN_PLANAR = false;

layout(binding = 0) readonly buffer BufIn4 { STORE4_T inp4[]; };
layout(binding = 1) readonly buffer BufW4 { STORE4_T wgt4[]; };
layout(binding = 2) writeonly buffer BufOut4 { STORE4_T outp4[]; };
layout(binding = 4) readonly buffer BufR4 { STORE4_T res4[]; };
#include "conv2d_nhwc_gemm.glsl"
#define A_K_CONTIGUOUS true
#define B_N_CONTIGUOUS false

// The input element A(m, k) reads, or −1 in the padding.
int input_of(uint m, uint k) {
  uint image;
  int iy0, ix0;
  conv_pixel(m, image, iy0, ix0);
  const uint tap = conv_tap(k);
  return conv_input_at(tap, k - tap * p.cin, image, iy0, ix0);
}

float gemm_load_a(uint bz, uint m, uint k) {
  const int at = input_of(m, k);
  return at < 0 ? 0.0f : float(inp[at]);
}

float gemm_load_b(uint bz, uint k, uint n) { return float(wgt[p.off_w + n * p.k + k]); }

// Channels c..c + 3 of one input pixel under one tap (Cin and the input's offset multiples of 4).
#define GEMM_LOAD_A4
vec4 gemm_load_a4(uint bz, uint m, uint k) {
  const int at = input_of(m, k);
  return at < 0 ? vec4(0.0) : vec4(inp4[uint(at) / 4u]);
}

#define GEMM_LOAD_B4
vec4 gemm_load_b4(uint bz, uint k, uint n) { return vec4(wgt4[(p.off_w + n * p.k + k) / 4u]); }

void gemm_store(uint bz, uint m, uint n, float acc) {
  const uint oi = m * p.cout + n;
  float v = acc;
  if ((p.flags & GEMM_FLAG_BIAS) != 0u) v += float(bias[p.off_bias + n]);
  const float r = (p.flags & GEMM_FLAG_RESIDUAL) != 0u ? float(res[p.off_r + oi]) : 0.0;
  outp[p.off_out + oi] = STORE_T(gemm_act_residual(v, r, p.flags));
}

#define GEMM_STORE4
vec4 gemm_load_epilogue4(uint bz, uint m, uint n) {
  return (p.flags & GEMM_FLAG_RESIDUAL) != 0u ? vec4(res4[(p.off_r + m * p.cout + n) / 4u]) : vec4(0.0);
}

void gemm_store4(uint bz, uint m, uint n, vec4 acc, vec4 r) {
  [[dont_unroll]] for (uint e = 0; e < 4u; ++e) {  // one activation instantiated, not four
    const float b = (p.flags & GEMM_FLAG_BIAS) != 0u ? float(bias[p.off_bias + n + e]) : 0.0;
    acc[e] = gemm_act_residual(acc[e] + b, r[e], p.flags);
  }
  outp4[(p.off_out + m * p.cout + n) / 4u] = STORE4_T(acc);
}

#include "gemm_scalar.glsl"
