#version 450
// Concatenation gather over a [outer, axis, inner] view: each invocation writes one output element
// in the axis range [axis_begin, axis_begin + offsets[pieces]) and reads it from the piece that
// covers it. Up to 7 pieces per dispatch (binding 0 is the output, 1..7 the pieces; unused piece
// bindings are bound to piece 0 by the host and never read).
#include "layout_common.glsl"
layout(local_size_x = 256) in;
layout(binding = 0) writeonly buffer Dst { ELEM_T dst[]; };
layout(binding = 1) readonly buffer In1 { ELEM_T in1[]; };
layout(binding = 2) readonly buffer In2 { ELEM_T in2[]; };
layout(binding = 3) readonly buffer In3 { ELEM_T in3[]; };
layout(binding = 4) readonly buffer In4 { ELEM_T in4[]; };
layout(binding = 5) readonly buffer In5 { ELEM_T in5[]; };
layout(binding = 6) readonly buffer In6 { ELEM_T in6[]; };
layout(binding = 7) readonly buffer In7 { ELEM_T in7[]; };
// Mirrored by ConcatPush in gpu/ops/layout.cpp. offsets[k] is piece k's first axis index relative
// to axis_begin; offsets[pieces] is the covered length. dst_base and bases[k] are element offsets
// into the bound windows (splitting of operands beyond one binding).
layout(push_constant) uniform Push {
  uint n, inner, out_axis, axis_begin, pieces, dst_base;
  uint offsets[8];
  uint bases[7];
} p;
void main() {
  uint i = linear_invocation(256);
  if (i >= p.n) return;
  const uint covered = p.offsets[p.pieces];
  uint r = i % p.inner;
  uint t = i / p.inner;
  uint a = t % covered;
  uint o = t / covered;
  uint k = 0;
  while (k + 1 < p.pieces && a >= p.offsets[k + 1]) ++k;
  uint len = p.offsets[k + 1] - p.offsets[k];
  uint s = p.bases[k] + (o * len + (a - p.offsets[k])) * p.inner + r;
  ELEM_T v;
  switch (k) {
    case 0: v = in1[s]; break;
    case 1: v = in2[s]; break;
    case 2: v = in3[s]; break;
    case 3: v = in4[s]; break;
    case 4: v = in5[s]; break;
    case 5: v = in6[s]; break;
    default: v = in7[s]; break;
  }
  dst[p.dst_base + (o * p.out_axis + p.axis_begin + a) * p.inner + r] = v;
}
