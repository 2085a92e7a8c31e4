#version 450
// out[i] = value for i < n, one 16-byte word per invocation (wide_io.glsl; the binding starts at
// element 0); the partial last word is written element by element.
#include "common.glsl"
#include "wide_io.glsl"
layout(local_size_x = 256) in;
layout(binding = 0) writeonly buffer Out { STORE_T out_data[]; };
layout(binding = 0) writeonly buffer OutW { uvec4 out_w[]; };
layout(push_constant) uniform Push { uint n; float value; } p;
void main() {
  const uint i = linear_invocation(256);
  const uint e = i * VW;
  if (e >= p.n) return;
  if (e + VW > p.n) {
    for (uint k = e; k < p.n; ++k) out_data[k] = STORE_T(p.value);
    return;
  }
  float f[VW];
  for (uint k = 0; k < VW; ++k) f[k] = p.value;
  out_w[i] = pack_word(f);
}
