#version 450
// Where (gpu/ops/elementwise.h): out = cond ≠ 0 ? x : y with NumPy broadcasting of all three. It
// selects and never computes: ELEM_BITS = 32 moves f32/i32 words, 16 f16 (layout_common.glsl);
// cond is i32 (ONNX's bool on the device). The host merges axes first; a broadcast axis has stride
// 0. SAME_SHAPE = 1 is the fast path for operands of one shape.
#include "layout_common.glsl"
layout(constant_id = 0) const uint SAME_SHAPE = 0;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer Cond { int cond[]; };
layout(binding = 1) readonly buffer X { ELEM_T x[]; };
layout(binding = 2) readonly buffer Y { ELEM_T y[]; };
layout(binding = 3) writeonly buffer Out { ELEM_T out_data[]; };
// Mirrored by WherePush in gpu/ops/elementwise.cpp; base_* as in binary.comp.
layout(push_constant) uniform Push {
  uint n, rank, base_c, base_x, base_y, base_out;
  uint shape[6];
  uint stride_c[6];
  uint stride_x[6];
  uint stride_y[6];
} p;

void main() {
  const uint i = linear_invocation(256);
  if (i >= p.n) return;
  uint ic = p.base_c + i, ix = p.base_x + i, iy = p.base_y + i;
  if (SAME_SHAPE == 0) {
    ic = p.base_c;
    ix = p.base_x;
    iy = p.base_y;
    uint rem = i;
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      const uint q = rem / p.shape[d];
      const uint c = rem - q * p.shape[d];
      ic += c * p.stride_c[d];
      ix += c * p.stride_x[d];
      iy += c * p.stride_y[d];
      rem = q;
    }
  }
  out_data[p.base_out + i] = cond[ic] != 0 ? x[ix] : y[iy];
}
