#version 450
// 2-D transposed convolution with stride == kernel on tensor cores (VK_NV_cooperative_matrix),
// fp16 storage or fp32 storage split into fp16 parts (DTYPE_F16=0, gemm_io.glsl), fp32 accumulation: the same operation, bindings, push and specialisation
// constants as conv_transpose2d.comp; the tile loop is gemm_coopmat.glsl. A = the weights read
// column-major ([Cin][Cout·KH·KW] in memory), B = the input image [Cin][H·W]; VEC_A / VEC_B select
// 16-byte loads when the host found the extents and offsets multiples of 8 elements.
#include "common.glsl"
#include "gemm_epilogue.glsl"
#include "gemm_io.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 8) const uint KH = 2;
layout(constant_id = 9) const uint KW = 2;
layout(constant_id = 10) const bool VEC_A = false;
layout(constant_id = 11) const bool VEC_B = false;

layout(binding = 0) readonly buffer BufIn { STORE_T inp[]; };
layout(binding = 0) readonly buffer BufIn4 { GEMM_WORD inp4[]; };
layout(binding = 1) readonly buffer BufW { STORE_T wgt[]; };
layout(binding = 1) readonly buffer BufW4 { GEMM_WORD wgt4[]; };
layout(binding = 2) writeonly buffer BufOut { STORE_T outp[]; };
layout(binding = 3) readonly buffer BufBias { STORE_T bias[]; };
layout(binding = 4) readonly buffer BufR { STORE_T res[]; };

// Mirrored by ConvTranspose2dPush in gpu/ops/conv_transpose2d.cpp (same as conv_transpose2d.comp).
layout(push_constant) uniform Push {
  uint cin, h, w, cout;
  uint stride_in, stride_out;
  uint off_in, off_w, off_out, off_r, off_bias;
  uint flags;
} p;

#define GEMM_M (p.cout * KH * KW)
#define GEMM_N (p.h * p.w)
#define GEMM_K p.cin
#define A_COLMAJOR true
#define B_COLMAJOR false

// Weights in storage orientation: row = k (input channel), col = m = (o, i, j).
GemmLoad8 gemm_load_a8(uint bz, uint row, uint col) {
  const uint cols = p.cout * KH * KW;
  if (row >= p.cin || col >= cols) return gemm_zero_load8();
  const uint base = p.off_w + row * cols + col;
  if (VEC_A) return GEMM_WORDS_LOAD8(wgt4, base);
  STORE_T v[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    v[e] = STORE_T(0.0);
    if (col + e < cols) v[e] = wgt[base + e];
  }
  return gemm_pack_load8(v);
}

// Input: row = k (input channel), col = pixel.
GemmLoad8 gemm_load_b8(uint bz, uint row, uint col) {
  const uint cols = p.h * p.w;
  if (row >= p.cin || col >= cols) return gemm_zero_load8();
  const uint base = p.off_in + bz * p.stride_in + row * cols + col;
  if (VEC_B) return GEMM_WORDS_LOAD8(inp4, base);
  STORE_T v[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    v[e] = STORE_T(0.0);
    if (col + e < cols) v[e] = inp[base + e];
  }
  return gemm_pack_load8(v);
}

void gemm_store(uint bz, uint m, uint n, float acc) {
  const uint o = m / (KH * KW), r = m % (KH * KW);
  const uint y = n / p.w, x = n % p.w;
  const uint oi = bz * p.stride_out + (o * p.h * KH + y * KH + r / KW) * (p.w * KW) + x * KW + r % KW;
  float v = acc;
  if ((p.flags & GEMM_FLAG_BIAS) != 0u) v += float(bias[p.off_bias + o]);
  const float residual = (p.flags & GEMM_FLAG_RESIDUAL) != 0u ? float(res[p.off_r + oi]) : 0.0;
  outp[p.off_out + oi] = STORE_T(gemm_epilogue_out(v, residual, p.flags));
}

// Input pixels n.. of row m = (output channel, tap): their outputs are KW apart along a row (or on
// the next rows), so element by element, every residual load before the first store.
void gemm_store_row8(uint bz, uint m, uint n, float acc[8]) {
  const uint o = m / (KH * KW), r = m % (KH * KW);
  const uint count = min(8u, p.h * p.w - n);
  const float b = (p.flags & GEMM_FLAG_BIAS) != 0u ? float(bias[p.off_bias + o]) : 0.0;
  uint oi[8];
  float rv[8];
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    const uint y = (n + e) / p.w, x = (n + e) % p.w;
    oi[e] = bz * p.stride_out + (o * p.h * KH + y * KH + r / KW) * (p.w * KW) + x * KW + r % KW;
    rv[e] = (p.flags & GEMM_FLAG_RESIDUAL) != 0u && e < count ? float(res[p.off_r + oi[e]]) : 0.0;
  }
  [[unroll]] for (uint e = 0; e < 8u; ++e) {
    if (e < count) outp[p.off_out + oi[e]] = STORE_T(gemm_epilogue_out(acc[e] + b, rv[e], p.flags));
  }
}

#include "gemm_coopmat.glsl"
