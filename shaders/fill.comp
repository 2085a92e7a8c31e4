#version 450
// out[i] = value for i < n.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(binding = 0) writeonly buffer Out { STORE_T out_data[]; };
layout(push_constant) uniform Push { uint n; float value; } p;
void main() {
  uint i = linear_invocation(256);
  if (i < p.n) out_data[i] = STORE_T(p.value);
}
