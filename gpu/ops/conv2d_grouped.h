// Grouped, dilated 2-D convolution with independent padding on each side (ONNX Conv):
//   out[b,o,y,x] = bias[o] + Σ_{c<Cin/G, i, j} W[o,c,i,j] · in[b, g·Cin/G + c, y·sh − pt + i·dh, x·sw − pl + j·dw]
// with g = o / (Cout/G); zero padding. NCHW activations, weights [Cout, Cin/G, KH, KW] as ONNX and
// PyTorch store them. Depthwise convolution is G = Cin. This is the direct form — one invocation
// per output, fp32 accumulation — for what conv2d's implicit GEMM does not take (groups,
// dilation, asymmetric padding); a group-1 convolution with neither belongs to conv2d.
//
// Large tensors: input, weights and output must each fit one binding (max_binding_bytes()).
//
// Tolerance (tests/gpu/ops/conv2d_grouped_test.cpp): |got − ref| ≤ tol·(Σ|w·x| + |bias| + 1e-6),
// tol = 1e-5 for f32 storage, 2e-3 for f16 storage.
#pragma once

#include <cstdint>
#include <optional>

#include "gpu/graph.h"

namespace recon::gpu::ops {

struct Conv2dGroupedParams {
  int64_t groups = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
};

// [B, Cout, Ho, Wo] with Ho = ⌊(H + pad_top + pad_bottom − dilation_h·(KH − 1) − 1) / stride_h⌋ + 1,
// or INVALID_ARGUMENT (channels not divisible by groups, a kernel larger than the padded input...).
Result<Shape> conv2d_grouped_output_shape(const Shape& input, const Shape& weight, const Conv2dGroupedParams& params);

// input [B, Cin, H, W], weight [Cout, Cin/G, KH, KW], bias [Cout] or none, out as above; one
// dtype (f32/f16).
Status conv2d_grouped(Graph& g, const Arg& input, const Arg& weight, const std::optional<Arg>& bias, const Arg& out,
                      const Conv2dGroupedParams& params);

}  // namespace recon::gpu::ops
