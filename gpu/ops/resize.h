// ONNX Resize on the last two axes of a tensor ([planes, H, W] → [planes, Ho, Wo], f32 or f16,
// fp32 arithmetic): nearest, linear and cubic interpolation with every coordinate transformation
// of ONNX opsets 10–18 except antialiasing. Interpolation is separable, so each axis is a table:
// for every output index, `taps` input indices (clamped to the edge, as the ONNX reference pads)
// and their weights, computed here on the host in double precision exactly as the ONNX
// reference (onnx/backend/test/case/node/resize.py: interpolate_1d_with_x) computes them, then
// out[p, y, x] = Σ_a wy[a] · Σ_b wx[b] · in[p, iy[a], ix[b]] on the GPU (shaders/resize.comp).
// Nearest takes one tap, linear two, cubic four. tf_crop_and_resize outputs whose source falls
// outside the input get the extrapolation value.
//
// gpu/ops/upsample.h is PyTorch's bilinear form with its coordinates computed in the kernel (no
// tables); this is the general one.
//
// Large tensors: in and out must each fit one binding. The tables are uploaded when the op is
// recorded and live as long as the graph.
//
// Tolerance (tests/gpu/ops/resize_test.cpp), relative to max|in|: nearest exact; linear and
// cubic ≤ 2e-6 (fp32); fp16 storage ≤ 1e-3.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/graph.h"

namespace recon::gpu::ops {

enum class ResizeMode : uint8_t { kNearest, kLinear, kCubic };
enum class ResizeCoordinates : uint8_t {
  kHalfPixel,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize,
};
enum class NearestRounding : uint8_t { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeParams {
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoordinates coordinates = ResizeCoordinates::kHalfPixel;
  NearestRounding nearest = NearestRounding::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;      // weights of taps outside the input are dropped and the rest renormalised
  float extrapolation_value = 0.0f;  // tf_crop_and_resize only
};

// One axis: output size, the scale (out/in, or the one the model gave), and the region of interest
// (tf_crop_and_resize only; fractions of the input).
struct ResizeAxis {
  int64_t in = 1, out = 1;
  double scale = 1.0;
  double roi_start = 0.0, roi_end = 1.0;
};

// The tap table of one axis: out·taps entries, output-major; index −1 marks an output that takes
// the extrapolation value.
struct ResizeTaps {
  int taps = 1;
  std::vector<int32_t> index;
  std::vector<float> weight;
};
ResizeTaps resize_taps(const ResizeParams& params, const ResizeAxis& axis);

// in [..., H, W] → out [..., Ho, Wo] (equal leading axes, rank ≥ 2) with the tables of y (H → Ho)
// and x (W → Wo) from resize_taps.
Status resize(Graph& g, const Arg& in, const Arg& out, const ResizeTaps& y, const ResizeTaps& x,
              float extrapolation_value = 0.0f);
// The same with the tables made from params for each axis.
Status resize(Graph& g, const Arg& in, const Arg& out, const ResizeParams& params, const ResizeAxis& y,
              const ResizeAxis& x);

}  // namespace recon::gpu::ops
