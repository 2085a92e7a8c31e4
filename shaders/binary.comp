#version 450
// out = a ∘ b with NumPy broadcasting, ∘ ∈ {+, −, ×, ÷} chosen by OP (ops::BinaryOp order).
// The host merges axes first; a broadcast axis has stride 0. PATH picks how elements are reached:
//   0: general, any merged shape of rank ≤ 6 (index arithmetic per element);
//   1: flat, operands of one shape at any element offsets (no index arithmetic);
//   2: wide, rank ≤ 2 with inner strides 0 or 1, one 16-byte word of out per invocation
//      (wide_io.glsl): same shapes, a row vector over rows ([R, C] ∘ [C]) and a column ([R, C] ∘ [R, 1])
//      or a scalar broadcast. The host guarantees C (rank 2) and every base and outer stride are whole
//      words; a rank-1 extent may end in a partial word, done element by element.
#include "common.glsl"
#include "wide_io.glsl"
layout(constant_id = 0) const uint OP = 0;
layout(constant_id = 1) const uint PATH = 0;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer A { STORE_T a[]; };
layout(binding = 0) readonly buffer AW { uvec4 aw[]; };
layout(binding = 1) readonly buffer B { STORE_T b[]; };
layout(binding = 1) readonly buffer BW { uvec4 bw[]; };
layout(binding = 2) writeonly buffer Out { STORE_T out_data[]; };
layout(binding = 2) writeonly buffer OutW { uvec4 out_w[]; };
// Mirrored by BinaryPush in gpu/ops/elementwise.cpp. base_* are element offsets into the bound
// windows (work split over operands larger than one binding).
layout(push_constant) uniform Push {
  uint n, rank, base_a, base_b, base_out;
  uint shape[6];
  uint stride_a[6];
  uint stride_b[6];
} p;

float apply(float x, float y) {
  switch (OP) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    default: return x / y;
  }
}

void general(uint i) {
  uint ia = p.base_a, ib = p.base_b, rem = i;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint extent = p.shape[d];
    uint q = rem / extent;
    uint c = rem - q * extent;
    ia += c * p.stride_a[d];
    ib += c * p.stride_b[d];
    rem = q;
  }
  out_data[p.base_out + i] = STORE_T(apply(float(a[ia]), float(b[ib])));
}

// Word `i` of out (elements e = i·VW …) at rank 1 or 2: element (row, col) of an operand with
// strides (outer, inner) is base + row·outer + col·inner.
void wide(uint i) {
  const uint e = i * VW;
  if (e >= p.n) return;
  const uint last = p.rank - 1;
  const uint cols = p.shape[last];
  const uint row = e / cols, col = e - row * cols;
  const uint outer_a = last > 0 ? p.stride_a[0] : 0, outer_b = last > 0 ? p.stride_b[0] : 0;
  const uint ia = p.base_a + row * outer_a + col * p.stride_a[last];
  const uint ib = p.base_b + row * outer_b + col * p.stride_b[last];
  if (e + VW > p.n) {  // the partial last word of a rank-1 extent
    for (uint k = 0; e + k < p.n; ++k) {
      out_data[p.base_out + e + k] =
          STORE_T(apply(float(a[ia + k * p.stride_a[last]]), float(b[ib + k * p.stride_b[last]])));
    }
    return;
  }
  float fa[VW], fb[VW];
  if (p.stride_a[last] == 1) {
    unpack_word(aw[ia / VW], fa);
  } else {
    for (uint k = 0; k < VW; ++k) fa[k] = float(a[ia]);
  }
  if (p.stride_b[last] == 1) {
    unpack_word(bw[ib / VW], fb);
  } else {
    for (uint k = 0; k < VW; ++k) fb[k] = float(b[ib]);
  }
  for (uint k = 0; k < VW; ++k) fa[k] = apply(fa[k], fb[k]);
  out_w[(p.base_out + e) / VW] = pack_word(fa);
}

void main() {
  const uint i = linear_invocation(256);
  if (PATH == 2) {
    wide(i);
  } else if (i < p.n) {
    if (PATH == 1) {
      out_data[p.base_out + i] = STORE_T(apply(float(a[p.base_a + i]), float(b[p.base_b + i])));
    } else {
      general(i);
    }
  }
}
