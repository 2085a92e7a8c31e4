#include "gpu/models/mast3r/dune_pos_embed.h"

#include <algorithm>
#include <cmath>

namespace recon::gpu {
namespace {

// Keys' cubic convolution kernel with parameter a, for |x| < 1 and 1 <= |x| < 2.
double cubic_near(double x, double a) {
  return ((a + 2) * x - (a + 3)) * x * x + 1;
}
double cubic_far(double x, double a) {
  return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

// PyTorch's area_pixel_compute_scale for align_corners=False: 1/scale_factor when one was given.
double source_scale(int64_t in, int64_t out, double scale_factor) {
  return scale_factor > 0 ? 1.0 / scale_factor : static_cast<double>(in) / static_cast<double>(out);
}

// upsample_bicubic2d: four taps around scale·(o + ½) − ½, a = −0.75, indices clamped to the edge
// (guard_index_and_lambda keeps the integer part ≤ in − 1 and the fraction in [0, 1]).
ResampleTaps plain_taps(int64_t in, double scale, int64_t o) {
  constexpr double kA = -0.75;
  const double real = scale * (static_cast<double>(o) + 0.5) - 0.5;
  const int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
  const double t = std::clamp(real - static_cast<double>(i0), 0.0, 1.0);
  const double w[4] = {cubic_far(t + 1, kA), cubic_near(t, kA), cubic_near(1 - t, kA), cubic_far(2 - t, kA)};
  // Clamped indices may repeat: express the four taps over the rows they land on.
  const int64_t lo = std::clamp<int64_t>(i0 - 1, 0, in - 1), hi = std::clamp<int64_t>(i0 + 2, 0, in - 1);
  ResampleTaps taps{lo, std::vector<double>(static_cast<size_t>(hi - lo + 1), 0.0)};
  for (int k = 0; k < 4; ++k) taps.weights[std::clamp<int64_t>(i0 - 1 + k, 0, in - 1) - lo] += w[k];
  return taps;
}

// _upsample_bicubic2d_aa (HelperInterpBase::_compute_indices_min_size_weights_aa with the a = −0.5
// filter): support 2 (2·scale when shrinking), taps from ⌊center − support + ½⌋ to
// ⌊center + support + ½⌋ (C++ truncation, clipped to the input), normalised to sum 1.
ResampleTaps antialiased_taps(int64_t in, double scale, int64_t o) {
  constexpr double kA = -0.5;
  const double support = scale >= 1.0 ? 2.0 * scale : 2.0;
  const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
  const int64_t max_taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  const double center = scale * (static_cast<double>(o) + 0.5);
  const int64_t xmin = std::max(static_cast<int64_t>(center - support + 0.5), int64_t{0});
  const int64_t xsize =
      std::clamp(std::min(static_cast<int64_t>(center + support + 0.5), in) - xmin, int64_t{0}, max_taps);
  ResampleTaps taps{xmin, std::vector<double>(static_cast<size_t>(xsize))};
  double total = 0.0;
  for (int64_t j = 0; j < xsize; ++j) {
    const double x = std::abs((static_cast<double>(j + xmin) - center + 0.5) * invscale);
    const double w = x < 1.0 ? cubic_near(x, kA) : x < 2.0 ? cubic_far(x, kA) : 0.0;
    taps.weights[static_cast<size_t>(j)] = w;
    total += w;
  }
  if (total != 0.0) {
    for (double& w : taps.weights) w /= total;
  }
  return taps;
}

}  // namespace

std::vector<ResampleTaps> bicubic_taps(int64_t in, int64_t out, double scale_factor, bool antialias) {
  const double scale = source_scale(in, out, scale_factor);
  std::vector<ResampleTaps> taps;
  taps.reserve(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o)
    taps.push_back(antialias ? antialiased_taps(in, scale, o) : plain_taps(in, scale, o));
  return taps;
}

std::vector<float> dune_patch_positions(const std::vector<float>& table, const DunePositionGrid& g, int64_t rows,
                                        int64_t cols, bool square_image) {
  const int64_t C = g.channels, M = g.grid;
  const float* patch = table.data() + C;  // row 0 is the class token's
  if (rows * cols == M * M && square_image) return std::vector<float>(patch, patch + M * M * C);
  // With an offset PyTorch gets scale factors and sizes ⌊grid · factor⌋ (= n for offsets in [0, 1)).
  const double fy = g.offset != 0.0 ? (static_cast<double>(rows) + g.offset) / static_cast<double>(M) : 0.0;
  const double fx = g.offset != 0.0 ? (static_cast<double>(cols) + g.offset) / static_cast<double>(M) : 0.0;
  const std::vector<ResampleTaps> ty = bicubic_taps(M, rows, fy, g.antialias);
  const std::vector<ResampleTaps> tx = bicubic_taps(M, cols, fx, g.antialias);
  std::vector<float> out(static_cast<size_t>(rows * cols * C));
  std::vector<double> acc(static_cast<size_t>(C));
  for (int64_t y = 0; y < rows; ++y) {
    for (int64_t x = 0; x < cols; ++x) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (size_t i = 0; i < ty[y].weights.size(); ++i) {
        for (size_t j = 0; j < tx[x].weights.size(); ++j) {
          const double w = ty[y].weights[i] * tx[x].weights[j];
          const float* src =
              patch + ((ty[y].first + static_cast<int64_t>(i)) * M + tx[x].first + static_cast<int64_t>(j)) * C;
          for (int64_t c = 0; c < C; ++c) acc[c] += w * src[c];
        }
      }
      float* dst = out.data() + (y * cols + x) * C;
      for (int64_t c = 0; c < C; ++c) dst[c] = static_cast<float>(acc[c]);
    }
  }
  return out;
}

}  // namespace recon::gpu
