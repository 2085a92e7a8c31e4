// 2-D convolution of channels-last (NHWC) maps as an implicit GEMM with a fused epilogue:
//   out[b,y,x,o] = act(bias[o] + Σ_{i,j,c} W[o,i,j,c]·in[b, y·sh−ph+i, x·sw−pw+j, c]) + R[b,y,x,o]
// input [B, H, W, Cin], weight [Cout, KH, KW, Cin] (ConvWeightLayout::kOHWI), bias [Cout] or none,
// out [B, Ho, Wo, Cout]; the residual (in `epilogue`) is shaped like out. One dtype (f32/f16); zero
// padding, any kernel size and stride; no input_relu.
// Why a second layout: in NCHW (conv2d.h) the GEMM's columns are one image's pixels, gathered
// element by element wherever the width is not a multiple of 8, each image its own grid layer.
// Channels-last makes M = B·Ho·Wo pixels of the whole batch, N = Cout and K = (ky, kx, c): a load of
// 8 values of K is 8 consecutive channels of one input pixel (one 16-byte load when Cin is a
// multiple of 8), and the epilogue's 8 columns are 8 channels of one output pixel. A 1×1 stride-1
// unpadded convolution is then a plain matmul of [B·H·W, Cin] by the weights transposed.
// Paths as for matmul (GemmPath): scalar (shaders/conv2d_nhwc.comp, every device, split over K on
// GPUs) and tensor cores (shaders/conv2d_nhwc_coopmat.comp, split-K for small grids).
//
// Large tensors: the batch is split into chunks of whole images when an operand exceeds
// maxStorageBufferRange (one dispatch each); a single image, or the weights, beyond it is refused.
//
// Tolerance (tests/gpu/ops/conv2d_nhwc_test.cpp): as conv2d, |got − ref| ≤ tol·(Σ|w·x| + |bias| +
// |r| + 1e-6), tol = 1e-5 for f32 storage, 2e-3 for f16 storage.
#pragma once

#include <optional>

#include "gpu/capabilities.h"
#include "gpu/graph.h"
#include "gpu/ops/conv2d.h"
#include "gpu/ops/matmul.h"

namespace recon::gpu::ops {

// How the input is stored: channels-last [B, H, W, Cin], or planar [B, Cin, H, W] (NCHW), read
// element by element: a network's first convolution of a few channels reads its NCHW input with no
// transpose before (ResNet-50's stem at batch 32 on an H200: the transpose of its 3-channel input
// took 70 µs, a quarter of the convolution).
enum class ConvInput : uint8_t { kChannelsLast, kPlanar };

// [B, Ho, Wo, Cout] for input [B, H, W, Cin] (or [B, Cin, H, W] when planar) and weight
// [Cout, KH, KW, Cin], or INVALID_ARGUMENT.
Result<Shape> conv2d_nhwc_output_shape(const Shape& input, const Shape& weight, const Conv2dParams& params,
                                       ConvInput input_layout = ConvInput::kChannelsLast);

Status conv2d_nhwc(Graph& g, const Capabilities& caps, const Arg& input, const Arg& weight,
                   const std::optional<Arg>& bias, const Arg& out, const Conv2dParams& params = {},
                   const Epilogue& epilogue = {}, GemmPath path = GemmPath::kAuto,
                   ConvInput input_layout = ConvInput::kChannelsLast);

}  // namespace recon::gpu::ops
