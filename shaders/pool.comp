#version 450
// 2-D max (MODE 0) or average (MODE 1) pooling of [planes, in_h, in_w] maps, PyTorch semantics:
// windows start at o·stride − pad; max ignores the padding (a NaN in the window wins, as in
// PyTorch) and takes the taps dilation apart (ONNX's dilations); average divides by the window
// clipped to [−pad, in + pad_end) when COUNT_INCLUDE_PAD = 1, else by the number of real input
// elements in it. pad_end = pad but for ONNX's SAME padding.
// INDICES = 1 (max only) also writes where each maximum lies, flat over every plane (ONNX MaxPool's
// Indices): row-major, or column-major within its plane when COLUMN_MAJOR = 1.
// INT_VALUES = 1 (max only): i32 elements compared as integers, exactly.
// STEP > 1: channels-last maps [images, in_h, in_w, STEP channels] (planes counts images; no
// INDICES): a window steps STEP elements from one tap to the next. 1: planar maps.
#include "common.glsl"
layout(constant_id = 0) const uint MODE = 0;
layout(constant_id = 1) const uint COUNT_INCLUDE_PAD = 1;
layout(constant_id = 2) const uint COLUMN_MAJOR = 0;
layout(constant_id = 3) const uint STEP = 1;  // elements between horizontal neighbours
layout(local_size_x = 256) in;
#ifndef INT_VALUES
#define INT_VALUES 0
#endif
#if INT_VALUES
#define ELEM_T int
#define VALUE_T int
#else
#define ELEM_T STORE_T
#define VALUE_T float
#endif
layout(binding = 0) readonly buffer In { ELEM_T src[]; };
layout(binding = 1) writeonly buffer Out { ELEM_T dst[]; };
#if INDICES
layout(binding = 2) writeonly buffer Indices { int indices[]; };
#endif
// Mirrored by PoolPush in gpu/ops/pool2d.cpp. base_* are element offsets into the bound windows;
// first_plane is the dispatch's first plane of the whole input.
layout(push_constant) uniform Push {
  uint planes, in_h, in_w, out_h, out_w;
  uint kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  uint base_in, base_out;
  uint pad_h_end, pad_w_end;
  uint base_indices, first_plane;
  uint dilation_h, dilation_w;
} p;

// The taps start + k·dilation that lie in [0, extent): k in [first, last).
ivec2 taps(int start, uint kernel, uint dilation, uint extent) {
  const int d = int(dilation);
  const int first = start < 0 ? (-start + d - 1) / d : 0;
  const int last = start < int(extent) ? min(int(kernel), (int(extent) - start + d - 1) / d) : 0;
  return ivec2(first, last);
}

// A NaN wins a float window, as in PyTorch.
bool beats(VALUE_T v, VALUE_T r) {
#if INT_VALUES
  return v > r;
#else
  return v > r || isnan(v);
#endif
}

VALUE_T window_max(uint base, uint i, uint plane, int hs, int ws) {
  const ivec2 ky = taps(hs, p.kernel_h, p.dilation_h, p.in_h), kx = taps(ws, p.kernel_w, p.dilation_w, p.in_w);
  const int dh = int(p.dilation_h), dw = int(p.dilation_w);
#if INT_VALUES
  int r = int(0x80000000u);
#else
  float r = uintBitsToFloat(0xff800000u);  // −inf
#endif
  int at_y = hs + ky.x * dh, at_x = ws + kx.x * dw;  // where r lies: the first maximum in row-major order, or the last NaN
  for (int j = ky.x; j < ky.y; ++j)
    for (int k = kx.x; k < kx.y; ++k) {
      const int y = hs + j * dh, x = ws + k * dw;
      const VALUE_T v = VALUE_T(src[base + (uint(y) * p.in_w + uint(x)) * STEP]);
      if (beats(v, r)) {
        r = v;
        at_y = y;
        at_x = x;
      }
    }
#if INDICES
  const uint whole = p.first_plane + plane;
  indices[p.base_indices + i] = int(COLUMN_MAJOR == 1 ? (whole * p.in_w + uint(at_x)) * p.in_h + uint(at_y)
                                                      : (whole * p.in_h + uint(at_y)) * p.in_w + uint(at_x));
#endif
  return r;
}

float window_average(uint base, int hs, int ws) {
  int he = min(hs + int(p.kernel_h), int(p.in_h + p.pad_h_end)), we = min(ws + int(p.kernel_w), int(p.in_w + p.pad_w_end));
  const int pool_size = (he - hs) * (we - ws);
  hs = max(hs, 0);
  ws = max(ws, 0);
  he = min(he, int(p.in_h));
  we = min(we, int(p.in_w));
  float acc = 0.0;
  for (int y = hs; y < he; ++y)
    for (int x = ws; x < we; ++x) acc += float(src[base + (uint(y) * p.in_w + uint(x)) * STEP]);
  const int count = COUNT_INCLUDE_PAD == 1 ? pool_size : (he - hs) * (we - ws);
  return (he > hs && we > ws) ? acc / float(count) : 0.0;
}

void main() {
  uint i = linear_invocation(256);
  if (i >= p.planes * p.out_h * p.out_w * STEP) return;
  const uint c = i % STEP;  // 0 for planar maps
  uint t = i / STEP;
  uint ox = t % p.out_w;
  t /= p.out_w;
  uint oy = t % p.out_h;
  uint plane = t / p.out_h;
  const int hs = int(oy * p.stride_h) - int(p.pad_h), ws = int(ox * p.stride_w) - int(p.pad_w);
  const uint base = p.base_in + plane * p.in_h * p.in_w * STEP + c;
#if INT_VALUES
  dst[p.base_out + i] = window_max(base, i, plane, hs, ws);
#else
  const float r = MODE == 0 ? window_max(base, i, plane, hs, ws) : window_average(base, hs, ws);
  dst[p.base_out + i] = STORE_T(r);
#endif
}
