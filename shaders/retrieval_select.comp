#version 450
// Top-K tokens by attention per image (how_select_local): token i of image b goes to output rank
// r = #{j : a_j > a_i or (a_j == a_i and j < i)}, kept when r < K. Ranks are a permutation of
// [0, N), so every output slot is written exactly once and ties go to the lower token index
// (deterministic). O(N²) comparisons per image, with the row streamed through shared memory in
// tiles of WG; N = 768 tokens costs 0.6 M comparisons per image. NaN attention: unspecified results
// (ranks collide, some slots stay unwritten; retrieval_gather.comp clamps what it reads).
layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer Attn { float attn[]; };      // [B, N]
layout(binding = 1) writeonly buffer TopAttn { float top_attn[]; };  // [image0 + B, K]
layout(binding = 2) writeonly buffer TopIdx { int top_idx[]; };      // [image0 + B, K]

// Mirrored by SelectPush in gpu/models/retrieval/retrieval_kernels.cpp. Grid: x = token tiles, y = images
// of this chunk; output rows start at image0 (outputs are bound whole, inputs per chunk).
layout(push_constant) uniform Push { uint tokens, keep, image0; } p;

shared float tile[WG];

void main() {
  const uint b = gl_WorkGroupID.y;
  const uint i = gl_WorkGroupID.x * WG + gl_LocalInvocationID.x;
  const uint row = b * p.tokens;
  const float a = i < p.tokens ? attn[row + i] : 0.0;
  uint rank = 0;
  for (uint t0 = 0; t0 < p.tokens; t0 += WG) {
    const uint j = t0 + gl_LocalInvocationID.x;
    tile[gl_LocalInvocationID.x] = j < p.tokens ? attn[row + j] : 0.0;
    barrier();
    const uint n = min(WG, p.tokens - t0);
    for (uint u = 0; u < n; ++u) {
      const float v = tile[u];
      rank += (v > a || (v == a && t0 + u < i)) ? 1u : 0u;
    }
    barrier();
  }
  if (i < p.tokens && rank < p.keep) {
    const uint o = (p.image0 + b) * p.keep + rank;
    top_attn[o] = a;
    top_idx[o] = int(i);
  }
}
