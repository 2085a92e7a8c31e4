#version 450
// 2-D max (MODE 0) or average (MODE 1) pooling of [planes, in_h, in_w] maps, PyTorch semantics:
// windows start at o·stride − pad; max ignores the padding (a NaN in the window wins, as in
// PyTorch); average divides by the window clipped to [−pad, in + pad_end) when COUNT_INCLUDE_PAD
// = 1, else by the number of real input elements in it. pad_end = pad but for ONNX's SAME padding.
#include "common.glsl"
layout(constant_id = 0) const uint MODE = 0;
layout(constant_id = 1) const uint COUNT_INCLUDE_PAD = 1;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer In { STORE_T src[]; };
layout(binding = 1) writeonly buffer Out { STORE_T dst[]; };
// Mirrored by PoolPush in gpu/ops/pool2d.cpp. base_* are element offsets into the bound windows.
layout(push_constant) uniform Push {
  uint planes, in_h, in_w, out_h, out_w;
  uint kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  uint base_in, base_out;
  uint pad_h_end, pad_w_end;
} p;

void main() {
  uint i = linear_invocation(256);
  if (i >= p.planes * p.out_h * p.out_w) return;
  uint ox = i % p.out_w;
  uint t = i / p.out_w;
  uint oy = t % p.out_h;
  uint plane = t / p.out_h;
  int hs = int(oy * p.stride_h) - int(p.pad_h), ws = int(ox * p.stride_w) - int(p.pad_w);
  int he = min(hs + int(p.kernel_h), int(p.in_h + p.pad_h_end)), we = min(ws + int(p.kernel_w), int(p.in_w + p.pad_w_end));
  const int pool_size = (he - hs) * (we - ws);
  hs = max(hs, 0);
  ws = max(ws, 0);
  he = min(he, int(p.in_h));
  we = min(we, int(p.in_w));
  uint base = p.base_in + plane * p.in_h * p.in_w;
  float r;
  if (MODE == 0) {
    r = uintBitsToFloat(0xff800000u);  // −inf
    for (int y = hs; y < he; ++y)
      for (int x = ws; x < we; ++x) {
        float v = float(src[base + uint(y) * p.in_w + uint(x)]);
        if (v > r || isnan(v)) r = v;
      }
  } else {
    float acc = 0.0;
    for (int y = hs; y < he; ++y)
      for (int x = ws; x < we; ++x) acc += float(src[base + uint(y) * p.in_w + uint(x)]);
    int count = COUNT_INCLUDE_PAD == 1 ? pool_size : (he - hs) * (we - ws);
    r = (he > hs && we > ws) ? acc / float(count) : 0.0;
  }
  dst[p.base_out + i] = STORE_T(r);
}
