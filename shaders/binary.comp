#version 450
// out = a ∘ b with NumPy broadcasting, ∘ chosen by OP (ops::BinaryOp order): arithmetic (+, −, ×,
// ÷, max, min, pow, prelu, mod with the sign of the divisor, fmod with the sign of the dividend),
// comparisons (=, <, >, ≤, ≥) and logic (and, or, xor).
// The host merges axes first; a broadcast axis has stride 0. SAME_SHAPE = 1 is the fast path for
// operands of one shape (no index arithmetic).
// INT_OPERANDS = 1: i32 operands and integer arithmetic (+, −, ×, ÷ truncating toward zero, max,
// min, mod, fmod, shifts of the unsigned words), wrapping on overflow, a division or remainder by zero giving 0; comparisons and logic give 0 or 1 (logic
// counts any non-zero word as true). The host refuses pow and prelu.
// BOOL_OUT = 1: float operands (fp32 arithmetic) compared into i32 0 or 1; a NaN operand makes every
// comparison false (Equal too), as in IEEE 754 and NumPy.
#include "common.glsl"
layout(constant_id = 0) const uint OP = 0;
#include "binary_apply.glsl"
#ifndef INT_OPERANDS
#define INT_OPERANDS 0
#endif
#ifndef BOOL_OUT
#define BOOL_OUT 0
#endif
#if INT_OPERANDS
#define VALUE_T int
#define OUT_T int
// The remainder of x / y truncated toward zero (sign of x); 0 by 0, and by −1 where x / y overflows.
int binary_rem_int(int x, int y) {
  return y == 0 || y == -1 ? 0 : x - (x / y) * y;
}
int binary_apply_int(int x, int y) {
  switch (OP) {
    case 18: return uint(y) < 32u ? int(uint(x) << uint(y)) : 0;
    case 19: return uint(y) < 32u ? int(uint(x) >> uint(y)) : 0;
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return y == 0 ? 0 : x / y;
    case 4: return max(x, y);
    case 5: return min(x, y);
    case 8: return int(x == y);
    case 9: return int(x < y);
    case 10: return int(x > y);
    case 11: return int(x <= y);
    case 12: return int(x >= y);
    case 13: return int(x != 0 && y != 0);
    case 14: return int(x != 0 || y != 0);
    case 15: return int((x != 0) != (y != 0));
    case 16: {  // Python's %: the remainder takes the sign of y
      int r = binary_rem_int(x, y);
      return r != 0 && (r < 0) != (y < 0) ? r + y : r;
    }
    default: return binary_rem_int(x, y);  // 17: C's %
  }
}
#elif BOOL_OUT
#define VALUE_T STORE_T
#define OUT_T int
// NaN is tested on the bits: without SignedZeroInfNanPreserve a driver may assume float
// comparisons never see one.
bool binary_is_nan(float v) { return (floatBitsToUint(v) & 0x7fffffffu) > 0x7f800000u; }
bool binary_compare(float x, float y) {
  if (binary_is_nan(x) || binary_is_nan(y)) return false;
  switch (OP) {
    case 8: return x == y;
    case 9: return x < y;
    case 10: return x > y;
    case 11: return x <= y;
    default: return x >= y;  // 12
  }
}
#else
#define VALUE_T STORE_T
#define OUT_T STORE_T
#endif
layout(constant_id = 1) const uint SAME_SHAPE = 0;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { VALUE_T a[]; };
layout(binding = 1) readonly buffer B { VALUE_T b[]; };
layout(binding = 2) writeonly buffer Out { OUT_T out_data[]; };
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
#elif BOOL_OUT
  out_data[p.base_out + i] = binary_compare(float(a[ia]), float(b[ib])) ? 1 : 0;
#else
  out_data[p.base_out + i] = STORE_T(binary_apply(float(a[ia]), float(b[ib])));
#endif
}
