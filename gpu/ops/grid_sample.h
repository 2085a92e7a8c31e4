// Samples an image at the positions a grid names (ONNX GridSample of opset 16, PyTorch's
// grid_sample on 4-D input), one kernel (shaders/grid_sample.comp): out[n, c, i, j] is x[n, c] at
// (grid[n, i, j, 1], grid[n, i, j, 0]), coordinates in [-1, 1] across the image's height and width
// (align_corners: -1 and 1 are the centres of the corner pixels; otherwise their outer edges).
// Bilinear, nearest (ties to even) or bicubic (Keys, A = -0.75) over 2 × 2, 1 or 4 × 4 taps; a
// position outside the image reads zeros, the border (clamped) or the image reflected at its edges,
// as the ONNX reference does: the padding applies to the position, then again to each tap.
// It never writes outside out, whatever the grid holds (NaN positions read zeros).
//
// Tolerance (tests/gpu/ops/grid_sample_test.cpp): fp32 arithmetic against float64, ≤ 2e-5 of the
// image's largest value in fp32 and ≤ 2e-3 in fp16 storage.
#pragma once

#include <cstdint>

#include "gpu/graph.h"

namespace recon::gpu::ops {

// The order is the shader's MODE specialisation constant.
enum class GridSampleMode : uint32_t { kBilinear = 0, kNearest = 1, kBicubic = 2 };
// The order is the shader's PADDING specialisation constant.
enum class GridSamplePadding : uint32_t { kZeros = 0, kBorder = 1, kReflection = 2 };

// x [N, C, H, W], grid [N, Ho, Wo, 2] (x then y), out [N, C, Ho, Wo], all of one dtype (f32 or
// f16), each within one binding.
Status grid_sample(Graph& g, const Arg& x, const Arg& grid, const Arg& out, GridSampleMode mode,
                   GridSamplePadding padding, bool align_corners);

}  // namespace recon::gpu::ops
