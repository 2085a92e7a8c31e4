// Region-of-interest pooling with bilinear samples (ONNX RoiAlign, opsets 10 and 16; Mask R-CNN's
// ROIAlign), one kernel (shaders/roi_align.comp): out[r, c, i, j] pools a grid of samples spread
// evenly over bin (i, j) of region r of image batch_indices[r], each sample bilinear between its
// four neighbours (a sample more than one pixel outside the image counts as zero; one within a
// pixel of the far edge clamps to it), as ONNX Runtime's kernel does. Average pooling divides by
// the number of samples; max pooling takes the largest of each sample's four weighted neighbours
// (ONNX Runtime's definition). A region whose batch index is outside the image batch pools zeros.
//
// Tolerance (tests/gpu/ops/roi_align_test.cpp): fp32 arithmetic against float64, ≤ 1e-5 of the
// image's largest value in fp32 and ≤ 2e-3 in fp16 storage.
#pragma once

#include <cstdint>

#include "gpu/graph.h"

namespace recon::gpu::ops {

struct RoiAlignParams {
  float spatial_scale = 1.0f;  // region coordinates to pixels
  int64_t sampling_ratio = 0;  // samples per bin along each axis; 0: ceil(region extent / bins)
  bool half_pixel = true;      // pixel centres at +0.5 (opset 16's default); else regions at least 1 × 1
  bool max = false;            // max pooling, else average
};

// x [N, C, H, W] and rois [R, 4] (x1, y1, x2, y2) of one float dtype (f32 or f16), batch_indices
// [R] i32, out [R, C, Ho, Wo] of x's dtype.
Status roi_align(Graph& g, const Arg& x, const Arg& rois, const Arg& batch_indices, const Arg& out,
                 const RoiAlignParams& params);

}  // namespace recon::gpu::ops
