// GridSample against a float64 transcription of the ONNX reference (onnx/reference/ops/
// op_grid_sample.py, opset 16's 2-D case): every mode (bilinear, nearest, bicubic), padding (zeros,
// border, reflection) and align_corners, positions inside, on and beyond the image's edges (several
// image widths out, where reflection bounces more than once), f32 and f16, and misuse.
#include "gpu/ops/grid_sample.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT
using ops::GridSampleMode;
using ops::GridSamplePadding;

struct GridSampleReference {
  GridSampleMode mode;
  GridSamplePadding padding;
  bool align;

  double lo(int64_t) const { return align ? 0.0 : -0.5; }
  double hi(int64_t len) const { return align ? static_cast<double>(len) - 1.0 : static_cast<double>(len) - 0.5; }

  static double reflect(double v, double lo, double hi) {
    const double range = hi - lo;
    if (v < lo) {
      const double d = lo - v, k = std::trunc(d / range), r = d - k * range;
      return std::fmod(k, 2.0) == 0.0 ? lo + r : hi - r;
    }
    if (v > hi) {
      const double d = v - hi, k = std::trunc(d / range), r = d - k * range;
      return std::fmod(k, 2.0) == 0.0 ? hi - r : lo + r;
    }
    return v;
  }

  double coordinate(double g, int64_t len) const {
    const auto n = static_cast<double>(len);
    double v = align ? (g + 1.0) / 2.0 * (n - 1.0) : ((g + 1.0) * n - 1.0) / 2.0;
    if (mode == GridSampleMode::kNearest) v = std::nearbyint(v);  // ties to even
    if (v < lo(len) || v > hi(len)) {
      if (padding == GridSamplePadding::kBorder) v = std::clamp(v, 0.0, n - 1.0);
      if (padding == GridSamplePadding::kReflection) v = reflect(v, lo(len), hi(len));
    }
    return v;
  }

  // The pixel a tap at i reads, or -1 for a zero.
  int64_t tap(int64_t i, int64_t len) const {
    if (padding == GridSamplePadding::kBorder) i = std::clamp<int64_t>(i, 0, len - 1);
    if (padding == GridSamplePadding::kReflection) {
      i = static_cast<int64_t>(reflect(static_cast<double>(i), lo(len), hi(len)));
    }
    return i >= 0 && i < len ? i : -1;
  }

  static void cubic(double t, double w[4]) {
    const double a = -0.75;
    const double t1 = t + 1, u = 1 - t, u1 = 2 - t;
    w[0] = ((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a;
    w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
    w[2] = ((a + 2) * u - (a + 3)) * u * u + 1;
    w[3] = ((a * u1 - 5 * a) * u1 + 8 * a) * u1 - 4 * a;
  }

  // One image plane [h, w] at grid position (gx, gy).
  double sample(const float* plane, int64_t h, int64_t w, double gx, double gy) const {
    const double vx = coordinate(gx, w), vy = coordinate(gy, h);
    const auto pixel = [&](int64_t r, int64_t c) {
      const int64_t tr = tap(r, h), tc = tap(c, w);
      return tr < 0 || tc < 0 ? 0.0 : static_cast<double>(plane[tr * w + tc]);
    };
    if (mode == GridSampleMode::kNearest) return pixel(static_cast<int64_t>(vy), static_cast<int64_t>(vx));
    const double fx = std::floor(vx), fy = std::floor(vy);
    double wx[4] = {1 - (vx - fx), vx - fx, 0, 0}, wy[4] = {1 - (vy - fy), vy - fy, 0, 0};
    int taps = 2;
    int64_t x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
    if (mode == GridSampleMode::kBicubic) {
      cubic(vx - fx, wx);
      cubic(vy - fy, wy);
      taps = 4;
      --x0;
      --y0;
    }
    double acc = 0;
    for (int r = 0; r < taps; ++r) {
      for (int c = 0; c < taps; ++c) acc += wy[r] * wx[c] * pixel(y0 + r, x0 + c);
    }
    return acc;
  }
};

class GridSampleTest : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(GridSampleTest, EveryModePaddingAndAlignmentMatchesTheOnnxReference) {
  const DType d = GetParam();
  const int64_t n = 2, c = 3, h = 5, w = 7, ho = 4, wo = 9;
  const Shape xs{n, c, h, w}, gs{n, ho, wo, 2}, os{n, c, ho, wo};
  std::vector<float> grid = random_floats(static_cast<size_t>(shape_numel(gs)), 31, -1.3f, 1.3f);
  // Corners, the centre and positions several images out (reflection bounces more than once).
  const float specials[] = {-1.0f, 1.0f, 0.0f, -1.0f, 1.0f, -1.0f, 3.7f, -2.9f, -5.3f, 4.1f, 1.02f, -1.02f};
  std::copy(std::begin(specials), std::end(specials), grid.begin());
  Tensor tx = upload_f32(rt(), d, xs, random_floats(static_cast<size_t>(shape_numel(xs)), 32, -1.0f, 1.0f));
  Tensor tg = upload_f32(rt(), d, gs, grid);
  const std::vector<float> x = download_f32(rt(), tx), g = download_f32(rt(), tg);
  for (const GridSampleMode mode : {GridSampleMode::kBilinear, GridSampleMode::kNearest, GridSampleMode::kBicubic}) {
    for (const GridSamplePadding padding :
         {GridSamplePadding::kZeros, GridSamplePadding::kBorder, GridSamplePadding::kReflection}) {
      for (const bool align : {false, true}) {
        const GridSampleReference ref{mode, padding, align};
        Tensor out = poisoned(rt(), d, os);
        Graph graph(rt());
        const Status s = ops::grid_sample(graph, tx, tg, out, mode, padding, align);
        ASSERT_TRUE(s.is_ok()) << s.to_string();
        ASSERT_TRUE(graph.run().is_ok());
        const std::vector<float> got = download_f32(rt(), out);
        double worst = 0;
        for (int64_t e = 0; e < shape_numel(os); ++e) {
          const int64_t j = e % wo, i = e / wo % ho, plane = e / (wo * ho), b = plane / c;
          const size_t at = static_cast<size_t>(((b * ho + i) * wo + j) * 2);
          const double want = ref.sample(x.data() + plane * h * w, h, w, g[at], g[at + 1]);
          worst = std::max(worst, std::isfinite(got[e]) ? std::abs(got[e] - want) : INFINITY);
        }
        EXPECT_LE(worst, d == DType::kF32 ? 2e-5 : 2e-3) << "mode " << static_cast<int>(mode) << ", padding "
                                                         << static_cast<int>(padding) << ", align_corners " << align;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GridSampleTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class GridSampleMisuseTest : public GpuTest {};

TEST_F(GridSampleMisuseTest, BadShapesAndDtypesAreRefused) {
  Graph g(rt());
  auto t = [&](DType d, const Shape& s) { return Tensor::empty(rt(), d, s).value(); };
  const auto run = [&](const Tensor& x, const Tensor& grid, const Tensor& out) {
    return ops::grid_sample(g, x, grid, out, GridSampleMode::kBilinear, GridSamplePadding::kZeros, false).code();
  };
  const DType f = DType::kF32;
  EXPECT_EQ(run(t(f, {1, 2, 3, 4}), t(f, {1, 5, 6, 3}), t(f, {1, 2, 5, 6})), StatusCode::kInvalidArgument);
  EXPECT_EQ(run(t(f, {1, 2, 3, 4}), t(f, {2, 5, 6, 2}), t(f, {1, 2, 5, 6})), StatusCode::kInvalidArgument);
  EXPECT_EQ(run(t(f, {1, 2, 3, 4}), t(f, {1, 5, 6, 2}), t(f, {1, 2, 6, 5})), StatusCode::kInvalidArgument);
  EXPECT_EQ(run(t(f, {2, 3, 4}), t(f, {5, 6, 2}), t(f, {2, 5, 6})), StatusCode::kInvalidArgument);
  EXPECT_EQ(run(t(f, {1, 2, 3, 4}), t(DType::kF16, {1, 5, 6, 2}), t(f, {1, 2, 5, 6})), StatusCode::kInvalidArgument);
  EXPECT_EQ(run(t(DType::kI32, {1, 2, 3, 4}), t(DType::kI32, {1, 5, 6, 2}), t(DType::kI32, {1, 2, 5, 6})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
