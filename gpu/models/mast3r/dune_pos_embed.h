// The DUNE ViT's learned position table resampled to an image's token grid on the host, exactly as
// naver/dune's DinoVisionTransformer.interpolate_pos_encoding asks PyTorch to (F.interpolate,
// mode "bicubic", align_corners=False): the table is used as it is when the grid has as many tokens
// as the table and the image is square; otherwise each axis is resampled from the table's grid,
// with scale factor (n + offset)/grid when the offset is non-zero (PyTorch then samples at
// 1/scale, not grid/n) or to the size n when it is zero; antialias selects PyTorch's separate
// antialiased kernel (Keys cubic a = −0.5, support widened when shrinking, weights renormalised at
// the borders) over the plain one (a = −0.75, border samples clamped). Arithmetic in double.
// Plain C++, no Vulkan: the encoder graph builder uploads the result.
#pragma once

#include <cstdint>
#include <vector>

namespace recon::gpu {

struct DunePositionGrid {
  int64_t grid = 0;      // the table holds 1 + grid² rows
  int64_t channels = 0;  // row width
  double offset = 0.0;   // interpolate_offset
  bool antialias = false;
};

// Per output position of one axis: the first input row, and the weight of each input row from it.
struct ResampleTaps {
  int64_t first = 0;
  std::vector<double> weights;
};

// The taps PyTorch's bicubic resampling uses along one axis from `in` to `out` samples;
// `scale_factor` > 0 is the factor given to F.interpolate (0: none, the size alone).
std::vector<ResampleTaps> bicubic_taps(int64_t in, int64_t out, double scale_factor, bool antialias);

// The patch positions [rows·cols, channels] (row-major token order) from `table`
// [1 + grid², channels] (row 0, the class token's, is not part of the result).
std::vector<float> dune_patch_positions(const std::vector<float>& table, const DunePositionGrid& g, int64_t rows,
                                        int64_t cols, bool square_image);

}  // namespace recon::gpu
