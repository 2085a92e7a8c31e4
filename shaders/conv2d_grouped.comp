#version 450
// Direct grouped, dilated 2-D convolution (gpu/ops/conv2d_grouped.h): one invocation per output
// element of [B, Cout, Ho, Wo], fp32 accumulation over its group's Cin/G channels and the kernel
// taps that land inside the input (the rest is zero padding).
#include "common.glsl"
layout(constant_id = 0) const uint HAS_BIAS = 0;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer In { STORE_T src[]; };
layout(binding = 1) readonly buffer Wt { STORE_T weight[]; };
layout(binding = 2) readonly buffer Bs { STORE_T bias[]; };  // the weights again when unused
layout(binding = 3) writeonly buffer Out { STORE_T dst[]; };
// Mirrored by ConvGroupedPush in gpu/ops/conv2d_grouped.cpp.
layout(push_constant) uniform Push {
  uint n, cin_per_group, cout_per_group, cin, cout;
  uint in_h, in_w, out_h, out_w, kernel_h, kernel_w;
  uint stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
} p;

void main() {
  const uint i = linear_invocation(256);
  if (i >= p.n) return;
  const uint ox = i % p.out_w;
  uint t = i / p.out_w;
  const uint oy = t % p.out_h;
  t /= p.out_h;
  const uint o = t % p.cout, b = t / p.cout;
  const uint c0 = (o / p.cout_per_group) * p.cin_per_group;
  const int y0 = int(oy * p.stride_h) - int(p.pad_top), x0 = int(ox * p.stride_w) - int(p.pad_left);
  float acc = HAS_BIAS == 1 ? float(bias[o]) : 0.0;
  for (uint c = 0; c < p.cin_per_group; ++c) {
    const uint plane = (b * p.cin + c0 + c) * p.in_h;
    const uint wbase = (o * p.cin_per_group + c) * p.kernel_h;
    for (uint ky = 0; ky < p.kernel_h; ++ky) {
      const int y = y0 + int(ky * p.dilation_h);
      if (y < 0 || y >= int(p.in_h)) continue;
      const uint row = (plane + uint(y)) * p.in_w;
      const uint wrow = (wbase + ky) * p.kernel_w;
      for (uint kx = 0; kx < p.kernel_w; ++kx) {
        const int x = x0 + int(kx * p.dilation_w);
        if (x < 0 || x >= int(p.in_w)) continue;
        acc += float(weight[wrow + kx]) * float(src[row + uint(x)]);
      }
    }
  }
  dst[i] = STORE_T(acc);
}
