#version 450
// Det (gpu/ops/det.h), one invocation per matrix: Gaussian elimination with partial pivoting in
// fp32 on the matrix's copy in `work`; the determinant is the product of the pivots, its sign
// flipped by each row swap.
#include "common.glsl"
layout(local_size_x = 64) in;
layout(binding = 0) readonly buffer Src { STORE_T src[]; };
layout(binding = 1) buffer Work { float work[]; };
layout(binding = 2) writeonly buffer Out { STORE_T out_data[]; };
// Mirrored by DetPush in gpu/ops/det.cpp.
layout(push_constant) uniform Push { uint batch, n; } p;

void main() {
  const uint m = linear_invocation(64);
  if (m >= p.batch) return;
  const uint n = p.n, base = m * n * n;
  for (uint e = 0; e < n * n; ++e) work[base + e] = float(src[base + e]);
  float det = 1.0;
  for (uint k = 0; k < n; ++k) {
    uint pivot = k;
    for (uint r = k + 1; r < n; ++r) {
      if (abs(work[base + r * n + k]) > abs(work[base + pivot * n + k])) pivot = r;
    }
    const float pv = work[base + pivot * n + k];
    if (pv == 0.0) {
      det = 0.0;
      break;
    }
    if (pivot != k) {
      for (uint c = k; c < n; ++c) {
        const float t = work[base + k * n + c];
        work[base + k * n + c] = work[base + pivot * n + c];
        work[base + pivot * n + c] = t;
      }
      det = -det;
    }
    det *= pv;
    for (uint r = k + 1; r < n; ++r) {
      const float f = work[base + r * n + k] / pv;
      for (uint c = k + 1; c < n; ++c) work[base + r * n + c] -= f * work[base + k * n + c];
    }
  }
  out_data[m] = STORE_T(det);
}
