#version 450
// GridSample (gpu/ops/grid_sample.h), one invocation per output element: the grid's position
// mapped to pixel coordinates, padded (BORDER clamps, REFLECTION reflects at the borders), then
// MODE's taps read with the same padding per tap, as the ONNX reference does. MODE: 0 bilinear,
// 1 nearest (ties to even), 2 bicubic (Keys, A = -0.75). PADDING: 0 zeros, 1 border, 2 reflection.
#include "common.glsl"
layout(constant_id = 0) const uint MODE = 0;
layout(constant_id = 1) const uint PADDING = 0;
layout(constant_id = 2) const uint ALIGN_CORNERS = 0;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer X { STORE_T x[]; };
layout(binding = 1) readonly buffer Grid { STORE_T grid[]; };
layout(binding = 2) writeonly buffer Out { STORE_T out_data[]; };
// Mirrored by GridSamplePush in gpu/ops/grid_sample.cpp.
layout(push_constant) uniform Push { uint n, channels, height, width, out_height, out_width; } p;

// Reflects v at lo and hi until it lies between them (lo = hi: lo).
float gs_reflect(float v, float lo, float hi) {
  const float range = hi - lo;
  if (range <= 0.0) return lo;
  if (v < lo) {
    const float d = lo - v, k = trunc(d / range), r = d - k * range;
    return mod(k, 2.0) == 0.0 ? lo + r : hi - r;
  }
  if (v > hi) {
    const float d = v - hi, k = trunc(d / range), r = d - k * range;
    return mod(k, 2.0) == 0.0 ? hi - r : lo + r;
  }
  return v;
}

// The pixel coordinate of normalised g along an axis of `len` pixels, rounded (nearest) and
// padded.
float gs_coordinate(float g, float len, float lo, float hi) {
  float v = ALIGN_CORNERS != 0u ? (g + 1.0) * 0.5 * (len - 1.0) : ((g + 1.0) * len - 1.0) * 0.5;
  if (MODE == 1u) v = roundEven(v);
  if (v < lo || v > hi) {
    if (PADDING == 1u) v = clamp(v, 0.0, len - 1.0);
    if (PADDING == 2u) v = gs_reflect(v, lo, hi);
  }
  return v;
}

// The pixel a tap at i reads along an axis of `len`, or -1 for a zero.
int gs_tap(int i, int len, float lo, float hi) {
  if (PADDING == 1u) i = clamp(i, 0, len - 1);
  if (PADDING == 2u) i = int(gs_reflect(float(i), lo, hi));
  return i >= 0 && i < len ? i : -1;
}

// Weights of the taps from floor(v) - 1 (bicubic) or floor(v) (bilinear) on, t = v - floor(v).
void gs_weights(float t, out float w[4]) {
  if (MODE == 2u) {
    const float a = -0.75, t1 = t + 1.0, u = 1.0 - t, u1 = 2.0 - t;
    w[0] = ((a * t1 - 5.0 * a) * t1 + 8.0 * a) * t1 - 4.0 * a;
    w[1] = ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
    w[2] = ((a + 2.0) * u - (a + 3.0)) * u * u + 1.0;
    w[3] = ((a * u1 - 5.0 * a) * u1 + 8.0 * a) * u1 - 4.0 * a;
  } else {
    w[0] = 1.0 - t;
    w[1] = t;
    w[2] = 0.0;
    w[3] = 0.0;
  }
}

void main() {
  const uint e = linear_invocation(256);
  if (e >= p.n) return;
  const uint j = e % p.out_width, i = (e / p.out_width) % p.out_height;
  const uint plane = e / (p.out_width * p.out_height), batch = plane / p.channels;
  const uint at = ((batch * p.out_height + i) * p.out_width + j) * 2u;
  const float fw = float(p.width), fh = float(p.height);
  const float lo_x = ALIGN_CORNERS != 0u ? 0.0 : -0.5, hi_x = ALIGN_CORNERS != 0u ? fw - 1.0 : fw - 0.5;
  const float lo_y = ALIGN_CORNERS != 0u ? 0.0 : -0.5, hi_y = ALIGN_CORNERS != 0u ? fh - 1.0 : fh - 0.5;
  const float vx = gs_coordinate(float(grid[at]), fw, lo_x, hi_x);
  const float vy = gs_coordinate(float(grid[at + 1u]), fh, lo_y, hi_y);
  const uint base = plane * p.height * p.width;
  const int w = int(p.width), h = int(p.height);
  float acc = 0.0;
  if (MODE == 1u) {
    // NaN or huge positions convert to no pixel in particular: gs_tap's range check keeps reads inside.
    const int ty = gs_tap(int(vy), h, lo_y, hi_y), tx = gs_tap(int(vx), w, lo_x, hi_x);
    if (ty >= 0 && tx >= 0) acc = float(x[base + uint(ty * w + tx)]);
  } else {
    const float fx = floor(vx), fy = floor(vy);
    float wx[4], wy[4];
    gs_weights(vx - fx, wx);
    gs_weights(vy - fy, wy);
    const int taps = MODE == 2u ? 4 : 2;
    const int x0 = int(fx) - (MODE == 2u ? 1 : 0), y0 = int(fy) - (MODE == 2u ? 1 : 0);
    for (int r = 0; r < taps; ++r) {
      const int ty = gs_tap(y0 + r, h, lo_y, hi_y);
      if (ty < 0) continue;
      float row = 0.0;
      for (int c = 0; c < taps; ++c) {
        const int tx = gs_tap(x0 + c, w, lo_x, hi_x);
        if (tx >= 0) row += wx[c] * float(x[base + uint(ty * w + tx)]);
      }
      acc += wy[r] * row;
    }
  }
  out_data[e] = STORE_T(acc);
}
