#version 450
// y = f(alpha·x + beta) elementwise; f is chosen by the OP specialisation constant (the order of
// ops::UnaryOp in gpu/ops/unary.h). In-place (same buffer bound twice) is allowed.
// WIDE = 1: one 16-byte word per invocation (wide_io.glsl); the host guarantees whole-word bases,
// and the partial last word is done element by element. WIDE = 0: one element per invocation.
#include "common.glsl"
#include "unary_math.glsl"
#include "wide_io.glsl"
layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint WIDE = 0;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer In { STORE_T x_data[]; };
layout(binding = 0) readonly buffer InW { uvec4 x_w[]; };
layout(binding = 1) writeonly buffer Out { STORE_T y_data[]; };
layout(binding = 1) writeonly buffer OutW { uvec4 y_w[]; };
// Mirrored by UnaryPush in gpu/ops/unary.cpp. base_* are element offsets into the bound windows.
layout(push_constant) uniform Push { uint n; float alpha, beta; uint base_in, base_out; } p;

float apply(float v) {
  switch (OP) {
    case 0: return v;                          // identity: scale_shift
    case 1: return max(v, 0.0);                // relu
    case 2: return recon_sigmoid(v);
    case 3: return recon_tanh(v);
    case 4: return recon_gelu_erf(v);
    case 5: return recon_gelu_tanh(v);
    default: return recon_exp(v);              // 6: exp
  }
}

float element(uint i) {
  return apply(fma(p.alpha, float(x_data[p.base_in + i]), p.beta));
}

void main() {
  const uint i = linear_invocation(256);
  if (WIDE == 0) {
    if (i < p.n) y_data[p.base_out + i] = STORE_T(element(i));
    return;
  }
  const uint e = i * VW;
  if (e >= p.n) return;
  if (e + VW > p.n) {
    for (uint k = e; k < p.n; ++k) y_data[p.base_out + k] = STORE_T(element(k));
    return;
  }
  float f[VW];
  unpack_word(x_w[(p.base_in + e) / VW], f);
  for (uint k = 0; k < VW; ++k) f[k] = apply(fma(p.alpha, f[k], p.beta));
  y_w[(p.base_out + e) / VW] = pack_word(f);
}
