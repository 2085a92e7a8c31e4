#version 450
// RoiAlign (gpu/ops/roi_align.h), one invocation per output element: the bin's grid of samples,
// each bilinear between its four neighbours as ONNX Runtime's kernel computes them, averaged or
// maxed.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer X { STORE_T x[]; };
layout(binding = 1) readonly buffer Rois { STORE_T rois[]; };
layout(binding = 2) readonly buffer BatchIndices { int batch_indices[]; };
layout(binding = 3) writeonly buffer Out { STORE_T out_data[]; };
// Mirrored by RoiAlignPush in gpu/ops/roi_align.cpp.
layout(push_constant) uniform Push {
  uint n, channels, height, width, out_height, out_width, batch;
  int sampling_ratio;
  float spatial_scale;
  uint half_pixel, max_mode;
} p;

// The sample at (sy, sx) of the plane at `base`: its four neighbours' weighted values.
vec4 weighted_taps(uint base, float sy, float sx) {
  if (sy < -1.0 || sy > float(p.height) || sx < -1.0 || sx > float(p.width)) return vec4(0.0);
  sy = max(sy, 0.0);
  sx = max(sx, 0.0);
  int y_lo = int(sy), x_lo = int(sx), y_hi = y_lo + 1, x_hi = x_lo + 1;
  if (y_lo >= int(p.height) - 1) {
    y_lo = y_hi = int(p.height) - 1;
    sy = float(y_lo);
  }
  if (x_lo >= int(p.width) - 1) {
    x_lo = x_hi = int(p.width) - 1;
    sx = float(x_lo);
  }
  const float ly = sy - float(y_lo), lx = sx - float(x_lo), hy = 1.0 - ly, hx = 1.0 - lx;
  const uint row_lo = base + uint(y_lo) * p.width, row_hi = base + uint(y_hi) * p.width;
  return vec4(hy * hx * float(x[row_lo + uint(x_lo)]), hy * lx * float(x[row_lo + uint(x_hi)]),
              ly * hx * float(x[row_hi + uint(x_lo)]), ly * lx * float(x[row_hi + uint(x_hi)]));
}

void main() {
  const uint e = linear_invocation(256);
  if (e >= p.n) return;
  const uint j = e % p.out_width, i = (e / p.out_width) % p.out_height;
  const uint c = (e / (p.out_width * p.out_height)) % p.channels, r = e / (p.out_width * p.out_height * p.channels);
  const int b = batch_indices[r];
  if (b < 0 || uint(b) >= p.batch || p.height == 0u || p.width == 0u) {
    out_data[e] = STORE_T(0.0);
    return;
  }
  const float offset = p.half_pixel != 0u ? 0.5 : 0.0;
  const float x0 = float(rois[r * 4u]) * p.spatial_scale - offset;
  const float y0 = float(rois[r * 4u + 1u]) * p.spatial_scale - offset;
  float roi_w = float(rois[r * 4u + 2u]) * p.spatial_scale - offset - x0;
  float roi_h = float(rois[r * 4u + 3u]) * p.spatial_scale - offset - y0;
  if (p.half_pixel == 0u) {
    roi_w = max(roi_w, 1.0);
    roi_h = max(roi_h, 1.0);
  }
  const float bin_h = roi_h / float(p.out_height), bin_w = roi_w / float(p.out_width);
  const int grid_h = p.sampling_ratio > 0 ? p.sampling_ratio : int(ceil(roi_h / float(p.out_height)));
  const int grid_w = p.sampling_ratio > 0 ? p.sampling_ratio : int(ceil(roi_w / float(p.out_width)));
  const uint base = (uint(b) * p.channels + c) * p.height * p.width;
  float acc = 0.0;
  bool first = true;
  for (int iy = 0; iy < grid_h; ++iy) {
    const float sy = y0 + float(i) * bin_h + (float(iy) + 0.5) * bin_h / float(grid_h);
    for (int ix = 0; ix < grid_w; ++ix) {
      const float sx = x0 + float(j) * bin_w + (float(ix) + 0.5) * bin_w / float(grid_w);
      const vec4 t = weighted_taps(base, sy, sx);
      if (p.max_mode == 0u) {
        acc += t.x + t.y + t.z + t.w;
      } else {
        const float m = max(max(t.x, t.y), max(t.z, t.w));
        acc = first ? m : max(acc, m);
        first = false;
      }
    }
  }
  if (p.max_mode == 0u) acc /= float(max(grid_h * grid_w, 1));
  out_data[e] = STORE_T(acc);
}
