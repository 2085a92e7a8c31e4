#version 450
// Strided gather: dst[dst_base + i] = src[base + Σ_d c_d · stride[d]], where (c_0 … c_{rank−1}) is the
// row-major coordinate of i in `shape`. Serves permute, slice and split (gpu/ops/layout.cpp), which
// merge adjacent axes first so rank is usually 2–3. A reversed slice's negative stride comes as two's
// complement: the sum wraps modulo 2^32 to the element's index.
// WORDS = 1: the host has expressed the pattern in 16-byte words (the innermost axis is contiguous
// and whole words, every other stride and both bases are whole words), so an invocation moves a
// word: element by element, MASt3R's pixel shuffle of the local-feature map (runs of 16 fp16
// values) moved ~0.57 TB/s on an H200.
#include "layout_common.glsl"
layout(constant_id = 0) const uint WORDS = 0;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer Src { ELEM_T src[]; };
layout(binding = 0) readonly buffer SrcWords { uvec4 src_words[]; };
layout(binding = 1) writeonly buffer Dst { ELEM_T dst[]; };
layout(binding = 1) writeonly buffer DstWords { uvec4 dst_words[]; };
// Mirrored by StridedPush in gpu/ops/layout.cpp.
layout(push_constant) uniform Push {
  uint n, rank, base, dst_base;
  uint shape[6];
  uint stride[6];
} p;
void main() {
  uint i = linear_invocation(256);
  if (i >= p.n) return;
  uint rem = i;
  uint s = p.base;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint extent = p.shape[d];
    uint q = rem / extent;
    s += (rem - q * extent) * p.stride[d];
    rem = q;
  }
  if (WORDS == 1) {
    dst_words[p.dst_base + i] = src_words[s];
  } else {
    dst[p.dst_base + i] = src[s];
  }
}
