#version 450
// C[M,N] = A[M,K] · B[K,N], row-major with leading dimensions, fp32 accumulation.
// The scalar path: TILE×TILE output tiles staged through shared memory, one output per invocation.
#include "common.glsl"
layout(constant_id = 0) const uint TILE = 16;
layout(local_size_x_id = 0, local_size_y_id = 0) in;
layout(binding = 0) readonly buffer A { STORE_T a[]; };
layout(binding = 1) readonly buffer B { STORE_T b[]; };
layout(binding = 2) writeonly buffer C { STORE_T c[]; };
layout(push_constant) uniform Push { uint m, n, k, lda, ldb, ldc; } p;
shared float tile_a[TILE][TILE];
shared float tile_b[TILE][TILE];
void main() {
  uint row = gl_WorkGroupID.y * TILE + gl_LocalInvocationID.y;
  uint col = gl_WorkGroupID.x * TILE + gl_LocalInvocationID.x;
  float acc = 0.0;
  for (uint k0 = 0; k0 < p.k; k0 += TILE) {
    uint ka = k0 + gl_LocalInvocationID.x;
    uint kb = k0 + gl_LocalInvocationID.y;
    tile_a[gl_LocalInvocationID.y][gl_LocalInvocationID.x] = (row < p.m && ka < p.k) ? float(a[row * p.lda + ka]) : 0.0;
    tile_b[gl_LocalInvocationID.y][gl_LocalInvocationID.x] = (kb < p.k && col < p.n) ? float(b[kb * p.ldb + col]) : 0.0;
    barrier();
    for (uint kk = 0; kk < TILE; ++kk) acc += tile_a[gl_LocalInvocationID.y][kk] * tile_b[kk][gl_LocalInvocationID.x];
    barrier();
  }
  if (row < p.m && col < p.n) c[row * p.ldc + col] = STORE_T(acc);
}
