#version 450
// out = a + b, elementwise over n elements of the same shape, one 16-byte word per invocation
// (wide_io.glsl; bindings start at element 0); the partial last word is added element by element.
#include "common.glsl"
#include "wide_io.glsl"
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { STORE_T a[]; };
layout(binding = 0) readonly buffer AW { uvec4 aw[]; };
layout(binding = 1) readonly buffer B { STORE_T b[]; };
layout(binding = 1) readonly buffer BW { uvec4 bw[]; };
layout(binding = 2) writeonly buffer Out { STORE_T out_data[]; };
layout(binding = 2) writeonly buffer OutW { uvec4 out_w[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
  const uint i = linear_invocation(256);
  const uint e = i * VW;
  if (e >= p.n) return;
  if (e + VW > p.n) {
    for (uint k = e; k < p.n; ++k) out_data[k] = STORE_T(float(a[k]) + float(b[k]));
    return;
  }
  float fa[VW], fb[VW];
  unpack_word(aw[i], fa);
  unpack_word(bw[i], fb);
  for (uint k = 0; k < VW; ++k) fa[k] += fb[k];
  out_w[i] = pack_word(fa);
}
