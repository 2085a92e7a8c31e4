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
// WORDS = 1 (channels-last float maps whose STEP and offsets are multiples of VW, wide_io.glsl): an
// invocation pools the VW channels of one 16-byte word, so that a tap is one 16-byte load; one
// 2-byte channel an invocation ran ResNet-50's max pool at batch 32 in fp16 at a fifth of the
// H200's bandwidth.
#include "common.glsl"
#extension GL_EXT_control_flow_attributes : require
layout(constant_id = 0) const uint MODE = 0;
layout(constant_id = 1) const uint COUNT_INCLUDE_PAD = 1;
layout(constant_id = 2) const uint COLUMN_MAJOR = 0;
layout(constant_id = 3) const uint STEP = 1;  // elements between horizontal neighbours
layout(constant_id = 4) const uint WORDS = 0;
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
#define POOL_WORDS (!INT_VALUES && !INDICES)
#if POOL_WORDS
#include "wide_io.glsl"
layout(binding = 0) readonly buffer InWords { uvec4 src_words[]; };
layout(binding = 1) writeonly buffer OutWords { uvec4 dst_words[]; };
#endif
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

#if POOL_WORDS
// The word of VW channels at output word i (WORDS = 1): the window's words, lane by lane as
// window_max and window_average take their elements.
void pool_word(uint i) {
  const uint words = STEP / VW;
  const uint c = i % words;
  uint t = i / words;
  const uint ox = t % p.out_w;
  t /= p.out_w;
  const uint oy = t % p.out_h, plane = t / p.out_h;
  const int hs = int(oy * p.stride_h) - int(p.pad_h), ws = int(ox * p.stride_w) - int(p.pad_w);
  const uint base = (p.base_in + plane * p.in_h * p.in_w * STEP) / VW + c;
  float r[VW], f[VW];
  if (MODE == 0) {
    const ivec2 ky = taps(hs, p.kernel_h, p.dilation_h, p.in_h), kx = taps(ws, p.kernel_w, p.dilation_w, p.in_w);
    [[unroll]] for (uint e = 0; e < VW; ++e) r[e] = uintBitsToFloat(0xff800000u);  // −inf
    for (int j = ky.x; j < ky.y; ++j)
      for (int k = kx.x; k < kx.y; ++k) {
        const uint y = uint(hs + j * int(p.dilation_h)), x = uint(ws + k * int(p.dilation_w));
        unpack_word(src_words[base + (y * p.in_w + x) * words], f);
        [[unroll]] for (uint e = 0; e < VW; ++e) r[e] = beats(f[e], r[e]) ? f[e] : r[e];
      }
  } else {
    int he = min(hs + int(p.kernel_h), int(p.in_h + p.pad_h_end)), we = min(ws + int(p.kernel_w), int(p.in_w + p.pad_w_end));
    const int pool_size = (he - hs) * (we - ws);
    const int y0 = max(hs, 0), x0 = max(ws, 0);
    he = min(he, int(p.in_h));
    we = min(we, int(p.in_w));
    [[unroll]] for (uint e = 0; e < VW; ++e) r[e] = 0.0;
    for (int y = y0; y < he; ++y)
      for (int x = x0; x < we; ++x) {
        unpack_word(src_words[base + (uint(y) * p.in_w + uint(x)) * words], f);
        [[unroll]] for (uint e = 0; e < VW; ++e) r[e] += f[e];
      }
    const int count = COUNT_INCLUDE_PAD == 1 ? pool_size : (he - y0) * (we - x0);
    [[unroll]] for (uint e = 0; e < VW; ++e) r[e] = (he > y0 && we > x0) ? r[e] / float(count) : 0.0;
  }
  dst_words[p.base_out / VW + i] = pack_word(r);
}
#endif

void main() {
  uint i = linear_invocation(256);
#if POOL_WORDS
  if (WORDS == 1) {
    if (i < p.planes * p.out_h * p.out_w * (STEP / VW)) pool_word(i);
    return;
  }
#endif
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
