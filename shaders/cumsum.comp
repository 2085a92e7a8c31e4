#version 450
// CumSum (gpu/ops/cumsum.h) over an [outer, len, inner] view: one invocation per line along the
// axis walks it in order (from the end when REVERSE), writing the running sum before (EXCLUSIVE)
// or after adding each element. ELEM_INT = 1 holds i32 words with integer arithmetic; otherwise
// STORE_T (f32 or f16 storage) with an fp32 running sum.
#include "common.glsl"
layout(constant_id = 0) const uint EXCLUSIVE = 0;
layout(constant_id = 1) const uint REVERSE = 0;
layout(local_size_x = 256) in;
#if ELEM_INT
#define ELEM_T int
#define ACC_T int
#else
#define ELEM_T STORE_T
#define ACC_T float
#endif
layout(binding = 0) readonly buffer X { ELEM_T x[]; };
layout(binding = 1) writeonly buffer Out { ELEM_T dst[]; };
// Mirrored by CumSumPush in gpu/ops/cumsum.cpp.
layout(push_constant) uniform Push { uint lines, len, inner; } p;

void main() {
  const uint line = linear_invocation(256);
  if (line >= p.lines) return;
  const uint o = line / p.inner, r = line - o * p.inner;
  const uint base = o * p.len * p.inner + r;
  ACC_T sum = ACC_T(0);
  for (uint j = 0; j < p.len; ++j) {
    const uint at = base + (REVERSE != 0u ? p.len - 1u - j : j) * p.inner;
    const ACC_T v = ACC_T(x[at]);
    if (EXCLUSIVE != 0u) {
      dst[at] = ELEM_T(sum);
      sum += v;
    } else {
      sum += v;
      dst[at] = ELEM_T(sum);
    }
  }
}
