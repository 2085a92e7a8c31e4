#version 450
// Separable resampling by tap tables (gpu/ops/resize.h): out[p, y, x] =
// Σ_a wy[a] · Σ_b wx[b] · in[p, iy[a], ix[b]], the y table at entries [0, out_h·taps_y) of the
// tables and the x table after it. An index of −1 marks an output that takes the extrapolation
// value (tf_crop_and_resize). The host computes the tables in double, as the ONNX reference does.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer In { STORE_T src[]; };
layout(binding = 1) writeonly buffer Out { STORE_T dst[]; };
layout(binding = 2) readonly buffer Index { int tap_index[]; };
layout(binding = 3) readonly buffer Weight { float tap_weight[]; };
// Mirrored by ResizePush in gpu/ops/resize.cpp.
layout(push_constant) uniform Push {
  uint planes, in_h, in_w, out_h, out_w, taps_y, taps_x, x_table;
  float extrapolation;
} p;

void main() {
  const uint i = linear_invocation(256);
  if (i >= p.planes * p.out_h * p.out_w) return;
  const uint ox = i % p.out_w;
  const uint t = i / p.out_w;
  const uint oy = t % p.out_h, plane = t / p.out_h;
  const uint ty = oy * p.taps_y, tx = p.x_table + ox * p.taps_x;
  if (tap_index[ty] < 0 || tap_index[tx] < 0) {
    dst[i] = STORE_T(p.extrapolation);
    return;
  }
  const uint base = plane * p.in_h * p.in_w;
  float acc = 0.0;
  for (uint a = 0; a < p.taps_y; ++a) {
    const uint row = base + uint(tap_index[ty + a]) * p.in_w;
    float r = 0.0;
    for (uint b = 0; b < p.taps_x; ++b) r += tap_weight[tx + b] * float(src[row + uint(tap_index[tx + b])]);
    acc += tap_weight[ty + a] * r;
  }
  dst[i] = STORE_T(acc);
}
