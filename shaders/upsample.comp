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
// words. In the integer modes a word's x sources step the quotient and remainder of the first one
// from output to output (word_sources): the same integers, one division per word instead of one per
// output, which had held the kernel to ~0.9 TB/s on an H200 (MASt3R's DPT upsampling at batch 8).
#include "common.glsl"
#include "wide_io.glsl"
#extension GL_EXT_control_flow_attributes : require
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

// Rows y0/y1 (weight ly of y1) of the plane starting at `base`, at input columns x0/x1 (weight lx of x1).
float sample_at(uint base, uint y0, uint y1, float ly, uint x0, uint x1, float lx) {
  float v00 = float(src[base + y0 * p.in_w + x0]), v01 = float(src[base + y0 * p.in_w + x1]);
  float v10 = float(src[base + y1 * p.in_w + x0]), v11 = float(src[base + y1 * p.in_w + x1]);
  float top = (1.0 - lx) * v00 + lx * v01;
  float bottom = (1.0 - lx) * v10 + lx * v11;
  return (1.0 - ly) * top + ly * bottom;
}

// The x sources of outputs ox0 … ox0 + VW − 1, as source() gives them. The integer modes write the
// numerator of output o as num(o) = num(ox0) + (o − ox0)·step over the denominator den, so its
// quotient and remainder follow from the previous output's by adding step's (dq, dr) and one carry.
// Words whose first output is clamped to 0 (align_corners = false, at the left edge) and the scale
// mode take source() per output.
void word_sources(uint ox0, uint den, uint dq, uint dr, out uint x0[VW], out uint x1[VW], out float lx[VW]) {
  const bool per_output = USE_SCALE == 1 || (ALIGN_CORNERS == 1 && p.out_w <= 1) ||
                          (ALIGN_CORNERS == 0 && (2 * ox0 + 1) * p.in_w <= p.out_w);
  if (per_output) {
    for (uint e = 0; e < VW; ++e) source(ox0 + e, p.in_w, p.out_w, p.inv_scale_w, x0[e], x1[e], lx[e]);
    return;
  }
  const uint num = ALIGN_CORNERS == 1 ? ox0 * (p.in_w - 1) : (2 * ox0 + 1) * p.in_w - p.out_w;
  uint q = num / den, r = num - q * den;
  [[unroll]] for (uint e = 0; e < VW; ++e) {
    x0[e] = q;
    x1[e] = q < p.in_w - 1 ? q + 1 : q;
    lx[e] = float(r) / float(den);
    q += dq;
    r += dr;
    if (r >= den) {
      r -= den;
      ++q;
    }
  }
}

void main() {
  if (WORDS == 1) {
    const uint row_words = p.out_w / VW, words = p.planes * p.out_h * row_words;
    // The x sources' denominator (kept above 0 where word_sources does not use it) and the quotient
    // and remainder of the numerator's step from one output to the next.
    const uint den = ALIGN_CORNERS == 1 ? max(p.out_w, 2u) - 1 : 2 * p.out_w;
    const uint step = ALIGN_CORNERS == 1 ? p.in_w - 1 : 2 * p.in_w;
    const uint dq = step / den, dr = step - dq * den;
    for (uint w = gl_GlobalInvocationID.x; w < words; w += gl_NumWorkGroups.x * 256) {
      const uint t = w / row_words, oy = t % p.out_h, plane = t / p.out_h;
      uint y0, y1;
      float ly;
      source(oy, p.in_h, p.out_h, p.inv_scale_h, y0, y1, ly);
      const uint base = p.base_in + plane * p.in_h * p.in_w;
      uint x0[VW], x1[VW];
      float lx[VW];
      word_sources((w % row_words) * VW, den, dq, dr, x0, x1, lx);
      float v[VW];
      for (uint e = 0; e < VW; ++e) v[e] = sample_at(base, y0, y1, ly, x0[e], x1[e], lx[e]);
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
  uint x0, x1;
  float lx;
  source(ox, p.in_w, p.out_w, p.inv_scale_w, x0, x1, lx);
  dst[p.base_out + i] = STORE_T(sample_at(p.base_in + plane * p.in_h * p.in_w, y0, y1, ly, x0, x1, lx));
}
