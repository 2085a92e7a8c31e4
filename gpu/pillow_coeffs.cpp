#include "gpu/pillow_coeffs.h"

#include <algorithm>
#include <cmath>

namespace recon {
namespace {

// Pillow's filters, in double.
double bicubic(double x) {
  constexpr double a = -0.5;
  x = std::abs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}
double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= M_PI;
  return std::sin(x) / x;
}
double lanczos(double x) {
  return (-3.0 <= x && x < 3.0) ? sinc(x) * sinc(x / 3.0) : 0.0;
}

}  // namespace

PillowCoeffs pillow_coeffs(int in_size, int out_size, PillowFilter filter) {
  const double support_base = filter == PillowFilter::kLanczos ? 3.0 : 2.0;
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = support_base * filterscale;
  const double ss = 1.0 / filterscale;  // Pillow multiplies by the reciprocal; dividing can differ in the last bit
  PillowCoeffs c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.bounds.resize(static_cast<size_t>(out_size) * 2);
  c.k.assign(static_cast<size_t>(out_size) * c.ksize, 0);
  std::vector<double> w(c.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int count = std::min(static_cast<int>(center + support + 0.5), in_size) - xmin;
    double total = 0.0;
    for (int x = 0; x < count; ++x) {
      const double arg = (x + xmin - center + 0.5) * ss;
      w[x] = filter == PillowFilter::kLanczos ? lanczos(arg) : bicubic(arg);
      total += w[x];
    }
    int32_t* k = &c.k[static_cast<size_t>(xx) * c.ksize];
    for (int x = 0; x < count; ++x) {
      const double v = total != 0.0 ? w[x] / total : w[x];
      const double scaled = v * (1 << kPillowPrecisionBits);
      k[x] = static_cast<int32_t>(v < 0 ? scaled - 0.5 : scaled + 0.5);
    }
    c.bounds[xx * 2] = xmin;
    c.bounds[xx * 2 + 1] = count;
  }
  return c;
}

}  // namespace recon
