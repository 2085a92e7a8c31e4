// 2-D max and average pooling of NCHW maps, [B, C, H, W] → [B, C, Ho, Wo] (f32 or f16, fp32
// arithmetic; max of i32 too, exact), PyTorch semantics (nn.MaxPool2d / nn.AvgPool2d; dilation for
// max only):
//   Ho = ⌊(H + 2·pad − span) / stride⌋ + 1, span = dilation·(kernel − 1) + 1, or with ceil_mode
//   ⌈…⌉ + 1 less one when the last window would start in the bottom/right padding;
//   max ignores padding (a NaN in the window wins, as PyTorch's does);
//   avg divides by the window clipped to the padded input when count_include_pad, else by the
//   number of real input elements it covers.
// kernel, stride, dilation ≥ 1 and 0 ≤ pad < kernel (ONNX Runtime's bound; PyTorch's is kernel /
// 2): every undilated window then holds at least one input element (a dilated window whose taps
// all miss the input would be −inf). divisor_override is not provided; max_pool2d_with_indices
// gives ONNX's Indices (PyTorch's return_indices are per plane).
//
// Large tensors: the B·C planes are split into dispatches over windows (layout.h).
//
// Tolerance (tests/gpu/ops/pool2d_test.cpp): max exact; avg ≤ 1e-6 relative to max|in| (fp32);
// fp16 storage adds the output rounding (≤ 1e-3).
#pragma once

#include <array>
#include <cstdint>

#include "gpu/graph.h"

namespace recon::gpu::ops {

struct Pool2dParams {
  std::array<int64_t, 2> kernel{2, 2};  // (h, w)
  std::array<int64_t, 2> stride{0, 0};  // 0: = kernel, as in PyTorch
  std::array<int64_t, 2> pad{0, 0};
  bool ceil_mode = false;
  bool count_include_pad = true;  // avg only
  // Padding after (bottom, right); -1: as `pad` (PyTorch's symmetric padding). ONNX's SAME_UPPER
  // and SAME_LOWER pad one side more than the other.
  std::array<int64_t, 2> pad_end{-1, -1};
  std::array<int64_t, 2> dilation{1, 1};  // max only: the window's taps this far apart
};

// (Ho, Wo) for an input of h × w, or INVALID_ARGUMENT for bad parameters.
Result<std::array<int64_t, 2>> pool2d_output_size(int64_t h, int64_t w, const Pool2dParams& params);

Status max_pool2d(Graph& g, const Arg& in, const Arg& out, const Pool2dParams& params);
// max_pool2d, and into `indices` (i32, out's shape) where each maximum lies as ONNX's MaxPool gives
// it, flat over the whole input: ((b·C + c)·H + y)·W + x, or ((b·C + c)·W + x)·H + y with
// column_major (ONNX's storage_order = 1). A window's first maximum in row-major order, or where a
// NaN wins its last NaN. B·C·H·W must be below 2^31.
Status max_pool2d_with_indices(Graph& g, const Arg& in, const Arg& out, const Arg& indices, const Pool2dParams& params,
                               bool column_major = false);
Status avg_pool2d(Graph& g, const Arg& in, const Arg& out, const Pool2dParams& params);

// The same of channels-last maps: [B, H, W, C] → [B, Ho, Wo, C] (conv2d_nhwc.h's layout). f32/f16
// (and i32 for max); C must be below 2^24 like the extents.
Status max_pool2d_nhwc(Graph& g, const Arg& in, const Arg& out, const Pool2dParams& params);
Status avg_pool2d_nhwc(Graph& g, const Arg& in, const Arg& out, const Pool2dParams& params);

}  // namespace recon::gpu::ops
