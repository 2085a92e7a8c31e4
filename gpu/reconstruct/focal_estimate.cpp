// Weiszfeld focal estimation: see focal_estimate.h.
#include "gpu/reconstruct/focal_estimate.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <vector>

namespace recon::gpu {

namespace {

// torch's nan_to_num(posinf=0, neginf=0): NaN and +-inf become 0.
double finite_or_zero(double v) {
  return std::isfinite(v) ? v : 0.0;
}

}  // namespace

double estimate_focal_weiszfeld(std::span<const double> pts3d, int height, int width, double ppx, double ppy,
                                double min_factor, double max_factor, int iterations) {
  const std::size_t n = static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
  const double focal_base = std::max(height, width) / (2.0 * std::tan(std::numbers::pi / 6.0));
  if (n == 0 || pts3d.size() != 3 * n) return focal_base;

  // u = pixel - pp, v = (X/Z, Y/Z); a = <v, u>, b = <v, v>: the per-pixel terms of both fits.
  std::vector<double> ux(n), uy(n), vx(n), vy(n), a(n), b(n);
  double sum_a = 0.0, sum_b = 0.0;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const std::size_t p = static_cast<std::size_t>(y) * width + x;
      ux[p] = x - ppx;
      uy[p] = y - ppy;
      vx[p] = finite_or_zero(pts3d[3 * p] / pts3d[3 * p + 2]);
      vy[p] = finite_or_zero(pts3d[3 * p + 1] / pts3d[3 * p + 2]);
      a[p] = vx[p] * ux[p] + vy[p] * uy[p];
      b[p] = vx[p] * vx[p] + vy[p] * vy[p];
      sum_a += a[p];
      sum_b += b[p];
    }
  }
  double focal = sum_a / sum_b;  // the L2 closed form (means of a and b: the 1/n cancels)
  for (int it = 0; it < iterations; ++it) {
    double wa = 0.0, wb = 0.0;
    for (std::size_t p = 0; p < n; ++p) {
      const double dx = ux[p] - focal * vx[p];
      const double dy = uy[p] - focal * vy[p];
      const double w = 1.0 / std::max(std::sqrt(dx * dx + dy * dy), 1e-8);
      wa += w * a[p];
      wb += w * b[p];
    }
    focal = wa / wb;
  }
  if (!std::isfinite(focal)) return focal_base;
  return std::clamp(focal, min_factor * focal_base, max_factor * focal_base);
}

}  // namespace recon::gpu
