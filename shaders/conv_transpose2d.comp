#version 450
// 2-D transposed convolution with stride == kernel (no overlapping taps), scalar path (every
// device). NCHW input, weights (Cin, Cout, KH, KW) as PyTorch stores them, NCHW output of
// (H·KH, W·KW); fused bias (per output channel), activation and residual (laid out like the output):
//   out[b, o, y·KH+i, x·KW+j] = act(bias[o] + Σ_c in[b,c,y,x]·W[c,o,i,j]) + R[...]
// GEMM view: M = Cout·KH·KW (rows (o,i,j)), N = H·W, K = Cin; A(m,k) = W[k][m] (the weights read
// column-major), B = the input image [Cin][H·W]; the store scatters each (o,i,j) row into its
// strided output positions. One batch image per workgroup z.
// Bindings: 0 input, 1 weight, 2 output, 3 bias, 4 residual (dummies when unused).
#include "common.glsl"
#include "gemm_epilogue.glsl"

layout(constant_id = 8) const uint KH = 2;
layout(constant_id = 9) const uint KW = 2;

layout(binding = 0) readonly buffer BufIn { STORE_T inp[]; };
layout(binding = 1) readonly buffer BufW { STORE_T wgt[]; };
layout(binding = 2) writeonly buffer BufOut { STORE_T outp[]; };
layout(binding = 3) readonly buffer BufBias { STORE_T bias[]; };
layout(binding = 4) readonly buffer BufR { STORE_T res[]; };

// Mirrored by ConvTranspose2dPush in gpu/ops/conv_transpose2d.cpp.
layout(push_constant) uniform Push {
  uint cin, h, w, cout;
  uint stride_in, stride_out;  // elements per batch image
  uint off_in, off_w, off_out, off_r, off_bias;
  uint flags;
} p;

#define GEMM_M (p.cout * KH * KW)
#define GEMM_N (p.h * p.w)
#define GEMM_K p.cin
#define A_K_CONTIGUOUS false
#define B_N_CONTIGUOUS true

float gemm_load_a(uint bz, uint m, uint k) { return float(wgt[p.off_w + k * (p.cout * KH * KW) + m]); }

float gemm_load_b(uint bz, uint k, uint n) { return float(inp[p.off_in + bz * p.stride_in + k * (p.h * p.w) + n]); }

void gemm_store(uint bz, uint m, uint n, float acc) {
  const uint o = m / (KH * KW), r = m % (KH * KW);
  const uint y = n / p.w, x = n % p.w;
  const uint oi = bz * p.stride_out + (o * p.h * KH + y * KH + r / KW) * (p.w * KW) + x * KW + r % KW;
  float v = acc;
  if ((p.flags & GEMM_FLAG_BIAS) != 0u) v += float(bias[p.off_bias + o]);
  v = gemm_activation(v, p.flags & GEMM_FLAG_ACT_MASK);
  if ((p.flags & GEMM_FLAG_RESIDUAL) != 0u) v += float(res[p.off_r + oi]);
  outp[p.off_out + oi] = STORE_T(v);
}

#include "gemm_scalar.glsl"
