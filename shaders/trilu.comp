#version 450
// Trilu (gpu/ops/trilu.h): out[..., i, j] = in[..., i, j] where j − i ≥ k (upper) or ≤ k (lower),
// else 0. ELEM_BITS = 32 moves f32/i32 words, 16 f16; zero is all-zero bits in each.
#include "layout_common.glsl"
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer Src { ELEM_T src[]; };
layout(binding = 1) writeonly buffer Dst { ELEM_T dst[]; };
// Mirrored by TriluPush in gpu/ops/trilu.cpp.
layout(push_constant) uniform Push { uint n, rows, cols, upper; int k; } p;

void main() {
  const uint e = linear_invocation(256);
  if (e >= p.n) return;
  const uint j = e % p.cols, i = (e / p.cols) % p.rows;
  const int d = int(j) - int(i);
  const bool keep = p.upper != 0u ? d >= p.k : d <= p.k;
  dst[e] = keep ? src[e] : ELEM_T(0);
}
