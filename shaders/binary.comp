#version 450
// out = a ∘ b with NumPy broadcasting, ∘ ∈ {+, −, ×, ÷, max, min, pow} chosen by OP (ops::BinaryOp order).
// The host merges axes first; a broadcast axis has stride 0. SAME_SHAPE = 1 is the fast path for
// operands of one shape (no index arithmetic).
#include "common.glsl"
layout(constant_id = 0) const uint OP = 0;
#include "binary_apply.glsl"
layout(constant_id = 1) const uint SAME_SHAPE = 0;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { STORE_T a[]; };
layout(binding = 1) readonly buffer B { STORE_T b[]; };
layout(binding = 2) writeonly buffer Out { STORE_T out_data[]; };
// Mirrored by BinaryPush in gpu/ops/elementwise.cpp. base_* are element offsets into the bound
// windows (work split over operands larger than one binding).
layout(push_constant) uniform Push {
  uint n, rank, base_a, base_b, base_out;
  uint shape[6];
  uint stride_a[6];
  uint stride_b[6];
} p;

void main() {
  uint i = linear_invocation(256);
  if (i >= p.n) return;
  uint ia = p.base_a + i, ib = p.base_b + i;
  if (SAME_SHAPE == 0) {
    ia = p.base_a;
    ib = p.base_b;
    uint rem = i;
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      uint extent = p.shape[d];
      uint q = rem / extent;
      uint c = rem - q * extent;
      ia += c * p.stride_a[d];
      ib += c * p.stride_b[d];
      rem = q;
    }
  }
  out_data[p.base_out + i] = STORE_T(binary_apply(float(a[ia]), float(b[ib])));
}
