#version 450
// Pointwise (1×1, stride 1, no padding) convolution with few output channels, out[b, m, :] =
// act(Σ_k W[m, k]·in[b, k, :] + bias[m]) for m < COUT ≤ 16: memory-bound, it streams the input once.
// An invocation owns one 16-byte word of VW pixels (wide_io.glsl) and all COUT outputs there, and
// loops over the input channels: each step loads one word per invocation (consecutive invocations,
// consecutive words) and the COUT weights of that channel, the same for the whole workgroup
// (gpu/ops/conv2d.h, conv2d_pointwise_few, says when the host takes this route and why).
// Invocations loop over the words of all images (gpu/ops/wide_access.h, grid_stride_groups).
#include "common.glsl"
#include "wide_io.glsl"
#include "gemm_epilogue.glsl"
#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 0) const uint COUT = 4;
layout(local_size_x = 256) in;
layout(binding = 0) readonly buffer In { uvec4 in_words[]; };
layout(binding = 1) readonly buffer W { STORE_T wgt[]; };
layout(binding = 2) writeonly buffer Out { uvec4 out_words[]; };
layout(binding = 3) readonly buffer Bias { STORE_T bias[]; };
// Mirrored by PointwiseFewPush in gpu/ops/conv2d.cpp. base_* are element offsets into the bound
// windows; base_in and base_out are whole words.
layout(push_constant) uniform Push {
  uint cin, plane_words, batch;
  uint base_in, base_w, base_out, base_bias;
  uint flags;  // GEMM_FLAG_BIAS and the activation (GEMM_FLAG_ACT_MASK)
} p;

void main() {
  const uint words = p.batch * p.plane_words;
  const uint act = p.flags & GEMM_FLAG_ACT_MASK;
  for (uint w = gl_GlobalInvocationID.x; w < words; w += gl_NumWorkGroups.x * 256) {
    const uint b = w / p.plane_words, at = w - b * p.plane_words;
    float acc[COUT][VW];
    [[unroll]] for (uint m = 0; m < COUT; ++m) {
      const float init = (p.flags & GEMM_FLAG_BIAS) != 0u ? float(bias[p.base_bias + m]) : 0.0;
      [[unroll]] for (uint e = 0; e < VW; ++e) acc[m][e] = init;
    }
    uint word = p.base_in / VW + b * p.cin * p.plane_words + at;
    for (uint k = 0; k < p.cin; ++k, word += p.plane_words) {
      float x[VW];
      unpack_word(in_words[word], x);
      [[unroll]] for (uint m = 0; m < COUT; ++m) {
        const float wk = float(wgt[p.base_w + m * p.cin + k]);
        [[unroll]] for (uint e = 0; e < VW; ++e) acc[m][e] = fma(wk, x[e], acc[m][e]);
      }
    }
    [[unroll]] for (uint m = 0; m < COUT; ++m) {
      float v[VW];
#if DTYPE_F16
      [[unroll]] for (uint e = 0; e < VW; ++e) v[e] = gemm_activation_fp16_out(acc[m][e], act);
#else
      [[unroll]] for (uint e = 0; e < VW; ++e) v[e] = gemm_activation(acc[m][e], act);
#endif
      out_words[p.base_out / VW + (b * COUT + m) * p.plane_words + at] = pack_word(v);
    }
  }
}
