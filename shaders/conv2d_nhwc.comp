#version 450
// 2-D convolution of channels-last maps as an implicit GEMM, scalar path (every device): input
// [B][H][W][Cin], weights [Cout][KH][KW][Cin], output and residual [B][Ho][Wo][Cout]; zero padding;
// fused bias (per output channel), activation and residual:
//   out[b,y,x,o] = act(bias[o] + Σ_{i,j,c} W[o,i,j,c]·in[b, y·SH-PH+i, x·SW-PW+j, c]) + R[b,y,x,o]
// GEMM view: M = B·Ho·Wo, N = Cout, K = KH·KW·Cin in (ky, kx, c) order; A(m, k) gathered from the
// input, B(k, n) the weights as stored ([N][K]). conv2d_nhwc_coopmat.comp is the tensor-core form.
// Bindings: 0 input, 1 weight, 2 output, 3 bias, 4 residual (dummies when unused).
#include "common.glsl"
#include "gemm_epilogue.glsl"

layout(constant_id = 8) const uint KH = 3;
layout(constant_id = 9) const uint KW = 3;
layout(constant_id = 10) const uint SH = 1;
layout(constant_id = 11) const uint SW = 1;
layout(constant_id = 12) const uint PH = 1;
layout(constant_id = 13) const uint PW = 1;
// The input planar, [B][Cin][H][W] (a network's NCHW input, read with no transpose before).
layout(constant_id = 14) const bool IN_PLANAR = false;

layout(binding = 0) readonly buffer BufIn { STORE_T inp[]; };
layout(binding = 1) readonly buffer BufW { STORE_T wgt[]; };
layout(binding = 2) writeonly buffer BufOut { STORE_T outp[]; };
layout(binding = 3) readonly buffer BufBias { STORE_T bias[]; };
layout(binding = 4) readonly buffer BufR { STORE_T res[]; };

// Mirrored by Conv2dNhwcPush in gpu/ops/conv2d_nhwc.cpp.
layout(push_constant) uniform Push {
  uint batch, h, w, cin;
  uint ho, wo, cout;
  uint k;  // KH·KW·Cin
  uint off_in, off_w, off_out, off_r, off_bias;
  uint flags;
} p;

#define GEMM_M (p.batch * p.ho * p.wo)
#define GEMM_N p.cout
#define GEMM_K p.k
#define A_K_CONTIGUOUS true
#define B_N_CONTIGUOUS false

float gemm_load_a(uint bz, uint m, uint k) {
  const uint plane = p.ho * p.wo;
  const uint image = m / plane, r = m - image * plane, oy = r / p.wo, ox = r - oy * p.wo;
  const uint tap = k / p.cin, c = k - tap * p.cin;
  // Unsigned wrap-around turns negative (padding) coordinates into huge ones: one test each.
  const uint iy = oy * SH + tap / KW - PH, ix = ox * SW + tap % KW - PW;
  if (iy >= p.h || ix >= p.w) return 0.0f;
  if (IN_PLANAR) return float(inp[p.off_in + ((image * p.cin + c) * p.h + iy) * p.w + ix]);
  return float(inp[p.off_in + ((image * p.h + iy) * p.w + ix) * p.cin + c]);
}

float gemm_load_b(uint bz, uint k, uint n) { return float(wgt[p.off_w + n * p.k + k]); }

void gemm_store(uint bz, uint m, uint n, float acc) {
  const uint oi = m * p.cout + n;
  float v = acc;
  if ((p.flags & GEMM_FLAG_BIAS) != 0u) v += float(bias[p.off_bias + n]);
  const float r = (p.flags & GEMM_FLAG_RESIDUAL) != 0u ? float(res[p.off_r + oi]) : 0.0;
  outp[p.off_out + oi] = STORE_T(gemm_act_residual(v, r, p.flags));
}

#include "gemm_scalar.glsl"
