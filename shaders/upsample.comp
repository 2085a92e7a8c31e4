#version 450
// Bilinear resampling of [planes, in_h, in_w] maps to [planes, out_h, out_w] with PyTorch's source
// coordinates (F.interpolate, mode='bilinear'):
//   align_corners = true:  src = o·(in − 1)/(out − 1)            (0 when out == 1)
//   align_corners = false: src = max((o + ½)·in/out − ½, 0), or with 1/scale for in/out when the
//                          caller gave a scale factor (USE_SCALE = 1, PyTorch's float arithmetic).
// With in/out ratios the coordinate is split exactly in integers (index and remainder), so the
// weights carry one rounding. i1 = min(i0 + 1, in − 1); out = lerp over (i0, i1) in y then x.
#include "common.glsl"
layout(constant_id = 0) const uint ALIGN_CORNERS = 0;
layout(constant_id = 1) const uint USE_SCALE = 0;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer In { STORE_T src[]; };
layout(binding = 1) writeonly buffer Out { STORE_T dst[]; };
// Mirrored by UpsamplePush in gpu/ops/upsample.cpp. base_* are element offsets into the bound windows.
layout(push_constant) uniform Push {
  uint planes, in_h, in_w, out_h, out_w, base_in, base_out;
  float inv_scale_h, inv_scale_w;  // 1/scale (USE_SCALE = 1 only)
} p;

void source(uint o, uint in_n, uint out_n, float inv_scale, out uint i0, out uint i1, out float l1) {
  if (ALIGN_CORNERS == 1) {
    if (out_n <= 1) {
      i0 = 0;
      l1 = 0.0;
    } else {
      uint num = o * (in_n - 1), den = out_n - 1;
      i0 = num / den;
      l1 = float(num - i0 * den) / float(den);
    }
  } else if (USE_SCALE == 0) {
    // src = ((2o + 1)·in − out) / (2·out), clamped at 0.
    uint num = (2 * o + 1) * in_n, den = 2 * out_n;
    if (num <= out_n) {
      i0 = 0;
      l1 = 0.0;
    } else {
      num -= out_n;
      i0 = num / den;
      l1 = float(num - i0 * den) / float(den);
    }
  } else {
    float s = max(inv_scale * (float(o) + 0.5) - 0.5, 0.0);
    i0 = min(uint(s), in_n - 1);
    l1 = clamp(s - float(i0), 0.0, 1.0);
  }
  i1 = i0 < in_n - 1 ? i0 + 1 : i0;
}

void main() {
  uint i = linear_invocation(256);
  if (i >= p.planes * p.out_h * p.out_w) return;
  uint ox = i % p.out_w;
  uint t = i / p.out_w;
  uint oy = t % p.out_h;
  uint plane = t / p.out_h;
  uint y0, y1, x0, x1;
  float ly, lx;
  source(oy, p.in_h, p.out_h, p.inv_scale_h, y0, y1, ly);
  source(ox, p.in_w, p.out_w, p.inv_scale_w, x0, x1, lx);
  uint base = p.base_in + plane * p.in_h * p.in_w;
  float v00 = float(src[base + y0 * p.in_w + x0]), v01 = float(src[base + y0 * p.in_w + x1]);
  float v10 = float(src[base + y1 * p.in_w + x0]), v11 = float(src[base + y1 * p.in_w + x1]);
  float top = (1.0 - lx) * v00 + lx * v01;
  float bottom = (1.0 - lx) * v10 + lx * v11;
  dst[p.base_out + i] = STORE_T((1.0 - ly) * top + ly * bottom);
}
