#version 450
// N-D pad gather (gpu/ops/pad.h): out[o] = in[src(o)], per axis src = o − begin, and outside
// [0, n) by MODE: 0 the constant, 1 clamped (edge), 2 mirrored without the edge (reflect),
// 3 modulo n (wrap; Tile and Expand). ELEM_BITS = 32 moves f32/i32 words, 16 f16.
#include "layout_common.glsl"
layout(constant_id = 0) const uint MODE = 0;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer Src { ELEM_T src[]; };
layout(binding = 1) writeonly buffer Dst { ELEM_T dst[]; };
// Mirrored by PadPush in gpu/ops/pad.cpp.
layout(push_constant) uniform Push {
  uint n, rank, value_bits, pad0;
  uint in_shape[6];
  uint out_shape[6];
  int begin[6];
} p;

// x modulo n in [0, n), for n > 0. % is taken of non-negative operands only: Vulkan leaves
// OpSMod of a negative operand undefined, and NVIDIA's differs from lavapipe's (reflect pads read
// the wrong pixels there).
int wrap(int x, int n) {
  if (x >= 0) return x % n;
  const int r = (-x) % n;
  return r == 0 ? 0 : n - r;
}

void main() {
  uint i = linear_invocation(256);
  if (i >= p.n) return;
  uint rem = i, s = 0, stride = 1;
  bool outside = false;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const uint extent = p.out_shape[d];
    const uint q = rem / extent;
    int x = int(rem - q * extent) - p.begin[d];
    rem = q;
    const int n = int(p.in_shape[d]);
    if (x < 0 || x >= n) {
      if (MODE == 0) {
        outside = true;
      } else if (MODE == 1) {
        x = clamp(x, 0, n - 1);
      } else if (MODE == 2) {
        if (n == 1) {
          x = 0;
        } else {
          x = wrap(x, 2 * (n - 1));
          if (x >= n) x = 2 * (n - 1) - x;
        }
      } else {
        x = wrap(x, n);
      }
    }
    if (!outside) s += uint(x) * stride;
    stride *= p.in_shape[d];
  }
  if (outside) {
#if ELEM_BITS == 32
    dst[i] = p.value_bits;
#else
    dst[i] = ELEM_T(uintBitsToFloat(p.value_bits));
#endif
  } else {
    dst[i] = src[s];
  }
}
