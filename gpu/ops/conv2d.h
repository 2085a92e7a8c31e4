// 2-D convolution (PyTorch Conv2d semantics) as an implicit GEMM with a fused epilogue:
//   out[b,o,y,x] = act(bias[o] + Σ_{c,i,j} W[o,c,i,j]·in'[b,c,y·sh−ph+i, x·sw−pw+j]) + R[b,o,y,x]
// NCHW activations, OIHW weights as PyTorch stores them (or tap by tap, ConvWeightLayout), zero
// padding, any kernel size and stride; in' = relu(in) when input_relu (DPT's ResidualConvUnit
// convolves relu(x) and adds x: conv2d(x, input_relu) then conv2d(…, residual = x) needs no
// separate ReLU pass).
// GEMM view: M = Cout, N = Ho·Wo (per image), K = Cin·KH·KW; the weights are A, the input is
// gathered into B on the fly (shaders/conv2d*.comp on the tile loops of matmul.h). 1×1 stride-1
// unpadded convolutions without input_relu run as a batched matmul instead (weights broadcast),
// or, on the automatic path with few output channels (conv2d_pointwise_few), as a kernel that
// streams the input once (shaders/conv_pointwise_few.comp).
// Paths: scalar (f32/f16, every device) and tensor cores (VK_NV_cooperative_matrix; f32 as two fp16
// parts), as for matmul (GemmPath). Kernel geometry is specialised into the pipeline (one per conv shape).
//
// Large tensors: when input, output or residual exceed maxStorageBufferRange the batch is split
// into chunks of whole images, one dispatch each with window views; a single image (or the
// weights) beyond the range is refused with INVALID_ARGUMENT.
//
// Tolerance (tests/gpu/ops/conv2d_test.cpp): |got − ref| ≤ tol·(Σ|w·x| + |bias| + |r| + 1e-6),
// tol = 1e-5 for f32 storage, 2e-3 for f16 storage.
#pragma once

#include <cstdint>
#include <optional>

#include "gpu/capabilities.h"
#include "gpu/graph.h"
#include "gpu/ops/matmul.h"

namespace recon::gpu::ops {

// How a convolution's weights are stored. kOIHW is PyTorch's [Cout, Cin, KH, KW]: the GEMM's K runs
// (c, ky, kx). kOHWI, [Cout, KH, KW, Cin], runs K tap by tap, (ky, kx, c): with Cin a multiple of
// the tensor-core K slice every slice is one tap, so a subgroup's gathered rows share one shift and
// one bounds check (conv2d_preferred_layout). Both paths take both; 1×1 weights are the same bytes.
enum class ConvWeightLayout : uint8_t { kOIHW, kOHWI };

// The layout to store fp16 weights of shape [Cout, Cin, KH, KW] in for the automatic path on this
// device: kOHWI where the tensor-core path runs them, the kernel has more than one tap and Cin is a
// multiple of 16; else kOIHW.
ConvWeightLayout conv2d_preferred_layout(const Capabilities& caps, const Shape& oihw_weight);

struct Conv2dParams {
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  bool input_relu = false;  // convolve relu(input)
};

// [B, Cout, Ho, Wo] with Ho = (H + 2·pad_h − KH)/stride_h + 1, or INVALID_ARGUMENT.
Result<Shape> conv2d_output_shape(const Shape& input, const Shape& weight, const Conv2dParams& params);

// Whether the automatic path runs a convolution of `input` by `weight` (shapes as conv2d takes
// them) as the few-output-channel pointwise kernel: 1×1, stride 1, no padding, no input_relu, at
// most kConv2dPointwiseFewMaxCout output channels, no residual, and image planes of whole 16-byte
// words. As a GEMM with M = Cout the tensor-core tiles filled 4 of 128 rows and streamed MASt3R's
// DPT head.4 input (128 channels at 384×512) at ~0.9 TB/s on an H200. The dispatch also needs
// every operand within one binding and the input and output windows on word boundaries (else the
// GEMM runs).
inline constexpr int64_t kConv2dPointwiseFewMaxCout = 16;
bool conv2d_pointwise_few(const Shape& input, const Shape& weight, DType dtype, const Conv2dParams& params,
                          bool residual);

// Whether the tensor-core path reads its gathered B rows as 16-byte words (VEC_B in
// shaders/conv2d_coopmat.comp) for an input of width w: stride 1 along x keeping the width, a
// shift of at most one element (3 wide with padding 1, or 1 wide without), rows of whole 16-byte
// words. The dispatch also needs the input window to start at a multiple of 8 elements.
bool conv2d_b_in_words(int64_t w, int64_t kw, const Conv2dParams& params);

// input [B, Cin, H, W], weight [Cout, Cin, KH, KW] (or [Cout, KH, KW, Cin] for kOHWI), bias [Cout]
// or none, out [B, Cout, Ho, Wo]; the residual (in `epilogue`) is shaped like out and may be out
// itself. One dtype (f32/f16).
Status conv2d(Graph& g, const Capabilities& caps, const Arg& input, const Arg& weight, const std::optional<Arg>& bias,
              const Arg& out, const Conv2dParams& params = {}, const Epilogue& epilogue = {},
              GemmPath path = GemmPath::kAuto, ConvWeightLayout layout = ConvWeightLayout::kOIHW);

}  // namespace recon::gpu::ops
