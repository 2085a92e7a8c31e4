#version 450
// out = a ∘ b with NumPy broadcasting, ∘ ∈ {+, −, ×, ÷, max, min, pow} chosen by OP (ops::BinaryOp order).
// The host merges axes first; a broadcast axis has stride 0. SAME_SHAPE = 1 is the fast path for
// operands of one shape (no index arithmetic).
// INT_OPERANDS = 1: i32 operands and integer arithmetic (+, −, ×, ÷ truncating toward zero, max,
// min; the host refuses the others), wrapping on overflow; a division by zero gives 0.
#include "common.glsl"
layout(constant_id = 0) const uint OP = 0;
#include "binary_apply.glsl"
#ifndef INT_OPERANDS
#define INT_OPERANDS 0
#endif
#if INT_OPERANDS
#define VALUE_T int
int binary_apply_int(int x, int y) {
  switch (OP) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return y == 0 ? 0 : x / y;
    case 4: return max(x, y);
    default: return min(x, y);  // 5
  }
}
#else
#define VALUE_T STORE_T
#endif
layout(constant_id = 1) const uint SAME_SHAPE = 0;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { VALUE_T a[]; };
layout(binding = 1) readonly buffer B { VALUE_T b[]; };
layout(binding = 2) writeonly buffer Out { VALUE_T out_data[]; };
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
#if INT_OPERANDS
  out_data[p.base_out + i] = binary_apply_int(a[ia], b[ib]);
#else
  out_data[p.base_out + i] = STORE_T(binary_apply(float(a[ia]), float(b[ib])));
#endif
}
