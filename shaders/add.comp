#version 450
// out = a + b, elementwise over n elements of the same shape.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { STORE_T a[]; };
layout(binding = 1) readonly buffer B { STORE_T b[]; };
layout(binding = 2) writeonly buffer Out { STORE_T out_data[]; };
layout(push_constant) uniform Push { uint n; } p;
void main() {
  uint i = linear_invocation(256);
  if (i < p.n) out_data[i] = STORE_T(float(a[i]) + float(b[i]));
}
