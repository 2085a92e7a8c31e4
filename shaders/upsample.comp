#version 450
// Bilinear resampling of [planes, in_h, in_w] maps to [planes, out_h, out_w] with PyTorch's source
// coordinates (F.interpolate, mode='bilinear'):
//   align_corners = true:  src = o·(in − 1)/(out − 1)            (0 when out == 1)
//   align_corners = false: src = max((o + ½)·in/out − ½, 0), or with 1/scale for in/out when the
//                          caller gave a scale factor (USE_SCALE = 1, PyTorch's float arithmetic).
// With in/out ratios the coordinate is split exactly in integers (index and remainder), so the
// weights carry one rounding. i1 = min(i0 + 1, in − 1); out = lerp over (i0, i1) in y then x.
// WORDS = 1: an invocation writes VW outputs of one row as a 16-byte word (wide_io.glsl) and a fixed
// grid loops over the words (gpu/ops/wide_access.h): one output per invocation paid a workgroup
// launch and six integer divisions per output. The host sets it when out_w and base_out are whole
// words.
#include "common.glsl"
#include "wide_io.glsl"
layout(constant_id = 0) const uint ALIGN_CORNERS = 0;
layout(constant_id = 1) const uint USE_SCALE = 0;
layout(constant_id = 2) const uint WORDS = 0;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer In { STORE_T src[]; };
layout(binding = 1) writeonly buffer Out { STORE_T dst[]; };
layout(binding = 1) writeonly buffer OutWords { uvec4 dst_words[]; };
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

// Output column ox of rows y0/y1 (weight ly of y1) of the plane starting at `base`.
float sample_at(uint base, uint y0, uint y1, float ly, uint ox) {
  uint x0, x1;
  float lx;
  source(ox, p.in_w, p.out_w, p.inv_scale_w, x0, x1, lx);
  float v00 = float(src[base + y0 * p.in_w + x0]), v01 = float(src[base + y0 * p.in_w + x1]);
  float v10 = float(src[base + y1 * p.in_w + x0]), v11 = float(src[base + y1 * p.in_w + x1]);
  float top = (1.0 - lx) * v00 + lx * v01;
  float bottom = (1.0 - lx) * v10 + lx * v11;
  return (1.0 - ly) * top + ly * bottom;
}

void main() {
  if (WORDS == 1) {
    const uint row_words = p.out_w / VW, words = p.planes * p.out_h * row_words;
    for (uint w = gl_GlobalInvocationID.x; w < words; w += gl_NumWorkGroups.x * 256) {
      const uint t = w / row_words, oy = t % p.out_h, plane = t / p.out_h;
      uint y0, y1;
      float ly;
      source(oy, p.in_h, p.out_h, p.inv_scale_h, y0, y1, ly);
      const uint base = p.base_in + plane * p.in_h * p.in_w, ox = (w % row_words) * VW;
      float v[VW];
      for (uint e = 0; e < VW; ++e) v[e] = sample_at(base, y0, y1, ly, ox + e);
      dst_words[p.base_out / VW + w] = pack_word(v);
    }
    return;
  }
  uint i = linear_invocation(256);
  if (i >= p.planes * p.out_h * p.out_w) return;
  uint ox = i % p.out_w;
  uint t = i / p.out_w;
  uint oy = t % p.out_h;
  uint plane = t / p.out_h;
  uint y0, y1;
  float ly;
  source(oy, p.in_h, p.out_h, p.inv_scale_h, y0, y1, ly);
  dst[p.base_out + i] = STORE_T(sample_at(p.base_in + plane * p.in_h * p.in_w, y0, y1, ly, ox));
}
