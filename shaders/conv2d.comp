#version 450
// 2-D convolution as an implicit GEMM, scalar path (every device). NCHW input, OIHW weights
// (PyTorch's layouts), NCHW output; zero padding; fused bias (per output channel), activation and
// residual (laid out like the output), and an optional ReLU on the input as it is read
// (GEMM_FLAG_INPUT_RELU: DPT's ResidualConvUnit convolves relu(x)):
//   out[b,o,y,x] = act(bias[o] + Σ_{c,i,j} W[o,c,i,j]·in'[b,c,y·SH-PH+i, x·SW-PW+j]) + R[b,o,y,x]
// GEMM view: M = Cout, N = Ho·Wo, K = Cin·KH·KW; A = the weights as [Cout][K]; B(k, n) is gathered
// from the input (im2col on the fly); one batch image per workgroup z. Kernel geometry is in
// specialisation constants so the index arithmetic divides by constants.
// Bindings: 0 input, 1 weight, 2 output, 3 bias, 4 residual (dummies when unused).
#include "common.glsl"
#include "gemm_epilogue.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 8) const uint KH = 3;
layout(constant_id = 9) const uint KW = 3;
layout(constant_id = 10) const uint SH = 1;
layout(constant_id = 11) const uint SW = 1;
layout(constant_id = 12) const uint PH = 1;
layout(constant_id = 13) const uint PW = 1;
// K's order, as in conv2d_coopmat.comp: 0 for (c, ky, kx) and OIHW weights; otherwise Cin, for
// (ky, kx, c) and weights [Cout][KH][KW][Cin].
layout(constant_id = 14) const uint TAP_CIN = 0;

layout(binding = 0) readonly buffer BufIn { STORE_T inp[]; };
layout(binding = 1) readonly buffer BufW { STORE_T wgt[]; };
layout(binding = 1) readonly buffer BufW4 { STORE4_T wgt4[]; };
layout(binding = 2) writeonly buffer BufOut { STORE_T outp[]; };
layout(binding = 2) writeonly buffer BufOut4 { STORE4_T outp4[]; };
layout(binding = 3) readonly buffer BufBias { STORE_T bias[]; };
layout(binding = 4) readonly buffer BufR { STORE_T res[]; };
layout(binding = 4) readonly buffer BufR4 { STORE4_T res4[]; };

// Mirrored by Conv2dPush in gpu/ops/conv2d.cpp.
layout(push_constant) uniform Push {
  uint cin, h, w;
  uint cout, ho, wo;
  uint k;                       // cin·KH·KW
  uint stride_in, stride_out;   // elements per batch image
  uint off_in, off_w, off_out, off_r, off_bias;
  uint flags;
} p;

#define GEMM_M p.cout
#define GEMM_N (p.ho * p.wo)
#define GEMM_K p.k
#define A_K_CONTIGUOUS true
#define B_N_CONTIGUOUS true

float gemm_load_a(uint bz, uint m, uint k) { return float(wgt[p.off_w + m * p.k + k]); }
// 4 weights of one output channel (K a multiple of 4).
#define GEMM_LOAD_A4
vec4 gemm_load_a4(uint bz, uint m, uint k) { return vec4(wgt4[(p.off_w + m * p.k + k) / 4u]); }

float gemm_load_b(uint bz, uint k, uint n) {
  const uint c = TAP_CIN != 0u ? k % TAP_CIN : k / (KH * KW);
  const uint r = TAP_CIN != 0u ? k / TAP_CIN : k % (KH * KW);  // the tap
  const uint oy = n / p.wo, ox = n % p.wo;
  // Unsigned wrap-around turns negative (padding) coordinates into huge ones: one test each.
  const uint iy = oy * SH + r / KW - PH, ix = ox * SW + r % KW - PW;
  if (iy >= p.h || ix >= p.w) return 0.0f;
  float v = float(inp[p.off_in + bz * p.stride_in + (c * p.h + iy) * p.w + ix]);
  return (p.flags & GEMM_FLAG_INPUT_RELU) != 0u ? max(v, 0.0f) : v;
}

void gemm_store(uint bz, uint m, uint n, float acc) {
  const uint oi = bz * p.stride_out + m * (p.ho * p.wo) + n;
  float v = acc;
  if ((p.flags & GEMM_FLAG_BIAS) != 0u) v += float(bias[p.off_bias + m]);
  const float r = (p.flags & GEMM_FLAG_RESIDUAL) != 0u ? float(res[p.off_r + oi]) : 0.0;
  outp[p.off_out + oi] = STORE_T(gemm_act_residual(v, r, p.flags));
}

// 4 adjacent pixels of one output channel (the pixel count and the offsets multiples of 4).
#define GEMM_STORE4
vec4 gemm_load_epilogue4(uint bz, uint m, uint n) {
  const uint oi = bz * p.stride_out + m * (p.ho * p.wo) + n;
  return (p.flags & GEMM_FLAG_RESIDUAL) != 0u ? vec4(res4[(p.off_r + oi) / 4u]) : vec4(0.0);
}

void gemm_store4(uint bz, uint m, uint n, vec4 acc, vec4 r) {
  const float b = (p.flags & GEMM_FLAG_BIAS) != 0u ? float(bias[p.off_bias + m]) : 0.0;
  [[dont_unroll]] for (uint e = 0; e < 4u; ++e) acc[e] = gemm_act_residual(acc[e] + b, r[e], p.flags);
  outp4[(p.off_out + bz * p.stride_out + m * (p.ho * p.wo) + n) / 4u] = STORE4_T(acc);
}

#include "gemm_scalar.glsl"
