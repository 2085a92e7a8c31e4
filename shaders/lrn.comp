#version 450
// Local response normalisation across channels (gpu/ops/lrn.h): one invocation per element of
// [N, C, inner], summing the squares of channels [c − before, c + after] that exist.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer In { STORE_T src[]; };
layout(binding = 1) writeonly buffer Out { STORE_T dst[]; };
// Mirrored by LrnPush in gpu/ops/lrn.cpp.
layout(push_constant) uniform Push {
  uint n, channels, inner, before, after;
  float alpha_over_size, beta, bias;
} p;

void main() {
  const uint i = linear_invocation(256);
  if (i >= p.n) return;
  const uint s = i % p.inner, t = i / p.inner;
  const uint c = t % p.channels, b = t / p.channels;
  const uint lo = c >= p.before ? c - p.before : 0u, hi = min(c + p.after, p.channels - 1);
  float sum = 0.0;
  for (uint k = lo; k <= hi; ++k) {
    const float v = float(src[(b * p.channels + k) * p.inner + s]);
    sum += v * v;
  }
  dst[i] = STORE_T(float(src[i]) / pow(p.bias + p.alpha_over_size * sum, p.beta));
}
