#version 450
// y = f(alpha·x + beta) elementwise; f is chosen by the OP specialisation constant (the order of
// ops::UnaryOp in gpu/ops/unary.h). In-place (same buffer bound twice) is allowed.
#include "common.glsl"
#include "unary_math.glsl"
layout(constant_id = 0) const uint OP = 0;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer In { STORE_T x_data[]; };
layout(binding = 1) writeonly buffer Out { STORE_T y_data[]; };
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

void main() {
  uint i = linear_invocation(256);
  if (i >= p.n) return;
  y_data[p.base_out + i] = STORE_T(apply(fma(p.alpha, float(x_data[p.base_in + i]), p.beta)));
}
