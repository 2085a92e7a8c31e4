// The channels-last convolution's operands as an implicit GEMM, shared by conv2d_nhwc.comp (scalar
// core) and conv2d_nhwc_coopmat.comp (tensor-core core): input [B][H][W][Cin] (or planar
// [B][Cin][H][W] with IN_PLANAR, which the includer declares before including this), weights
// [Cout][KH][KW][Cin], output and residual [B][Ho][Wo][Cout]. GEMM view: M = B·Ho·Wo (every
// image's pixels in one grid), N = Cout, K = KH·KW·Cin in (ky, kx, c) order.
// Bindings: 0 input, 1 weight, 2 output, 3 bias, 4 residual (dummies when unused); the includer
// declares its vector views of them.

layout(constant_id = 8) const uint KH = 3;
layout(constant_id = 9) const uint KW = 3;
layout(constant_id = 10) const uint SH = 1;
layout(constant_id = 11) const uint SW = 1;
layout(constant_id = 12) const uint PH = 1;
layout(constant_id = 13) const uint PW = 1;

layout(binding = 0) readonly buffer BufIn { STORE_T inp[]; };
layout(binding = 1) readonly buffer BufW { STORE_T wgt[]; };
layout(binding = 2) writeonly buffer BufOut { STORE_T outp[]; };
layout(binding = 3) readonly buffer BufBias { STORE_T bias[]; };
layout(binding = 4) readonly buffer BufR { STORE_T res[]; };

// Mirrored by Conv2dNhwcPush in gpu/ops/conv2d_nhwc.cpp. The gather divides by Ho·Wo, Wo and Cin
// with the host's multipliers (fast_divide.glsl); the shifts are bytes 0, 1 and 2 of div_shifts.
layout(push_constant) uniform Push {
  uint batch, h, w, cin;
  uint ho, wo, cout;
  uint k;  // KH·KW·Cin
  uint off_in, off_w, off_out, off_r, off_bias;
  uint flags;
  uint div_plane, div_wo, div_cin, div_shifts;
} p;
#include "fast_divide.glsl"

#define GEMM_M (p.batch * p.ho * p.wo)
#define GEMM_N p.cout
#define GEMM_K p.k

// Output pixel m as its image and its first input row and column (may be negative: padding).
void conv_pixel(uint m, out uint image, out int iy0, out int ix0) {
  image = fast_divide(m, p.div_plane, p.div_shifts & 0xffu);
  const uint r = m - image * (p.ho * p.wo), oy = fast_divide(r, p.div_wo, (p.div_shifts >> 8) & 0xffu);
  const uint ox = r - oy * p.wo;
  iy0 = int(oy * SH) - int(PH), ix0 = int(ox * SW) - int(PW);
}

// k's tap (ky·KW + kx).
uint conv_tap(uint k) { return fast_divide(k, p.div_cin, (p.div_shifts >> 16) & 0xffu); }

// The input element of channel c under tap `tap` of output pixel (image, iy0, ix0), or −1 in the
// padding.
int conv_input_at(uint tap, uint c, uint image, int iy0, int ix0) {
  const uint ky = tap / KW, kx = tap - ky * KW;
  const uint iy = uint(iy0 + int(ky)), ix = uint(ix0 + int(kx));  // wraps when negative
  if (iy >= p.h || ix >= p.w) return -1;
  if (IN_PLANAR) return int(p.off_in + ((image * p.cin + c) * p.h + iy) * p.w + ix);
  return int(p.off_in + ((image * p.h + iy) * p.w + ix) * p.cin + c);
}
