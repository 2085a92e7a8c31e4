#version 450
// MASt3R's 2-D RoPE (spec §3.2), in place on token-major rows. For a head vector t of D elements at
// grid position (y, x): the first half t[0, D/2) rotates with y, the second half with x; inside a
// half, element j pairs with j + D/4; ω_j = 1 / base^(j / (D/4)), θ = p · ω_j, all in fp32:
//   out[j] = t[j]·cos θ − t[j+D/4]·sin θ,   out[j+D/4] = t[j+D/4]·cos θ + t[j]·sin θ
// (rope.glsl). One invocation per (token, head, j) rotates both halves.
#include "common.glsl"
#include "rope.glsl"

layout(local_size_x = 256) in;

layout(binding = 0) buffer X { STORE_T x[]; };

layout(push_constant) uniform Push {
  uint count;            // tokens × heads × D/4 in this dispatch
  uint tokens_per_item;  // N = grid_h · grid_w: token n of an item sits at (n / grid_w, n % grid_w)
  uint grid_w;
  uint row_stride;  // elements per token row
  uint col_offset;  // column of the first head
  uint heads;
  uint quarter;  // D / 4
  float base;
} p;

void rotate(uint i0, uint i1, float theta) {
  const vec2 r = rope_rotate(float(x[i0]), float(x[i1]), theta);
  x[i0] = STORE_T(r.x);
  x[i1] = STORE_T(r.y);
}

void main() {
  const uint i = linear_invocation(256);
  if (i >= p.count) return;
  const uint j = i % p.quarter;
  const uint t = i / p.quarter;
  const uint head = t % p.heads;
  const uint token = t / p.heads;
  const uint n = token % p.tokens_per_item;
  const float py = float(n / p.grid_w), px = float(n % p.grid_w);
  const uint e = token * p.row_stride + p.col_offset + head * 4u * p.quarter + j;
  rotate(e, e + p.quarter, rope_theta(py, p.base, j, p.quarter));
  rotate(e + 2u * p.quarter, e + 3u * p.quarter, rope_theta(px, p.base, j, p.quarter));
}
