#version 450
// One-hot rows (gpu/ops/one_hot.h): out[o, j, r] = j == index[o, r] (negative from the end) ? on : off.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer Indices { int indices[]; };
layout(binding = 1) writeonly buffer Out { STORE_T dst[]; };
// Mirrored by OneHotPush in gpu/ops/one_hot.cpp.
layout(push_constant) uniform Push { uint n, depth, inner; float on, off; } p;

void main() {
  const uint e = linear_invocation(256);
  if (e >= p.n) return;
  const uint r = e % p.inner, j = (e / p.inner) % p.depth, o = e / (p.inner * p.depth);
  int k = indices[o * p.inner + r];
  if (k < 0) k += int(p.depth);
  dst[e] = STORE_T(k == int(j) ? p.on : p.off);
}
