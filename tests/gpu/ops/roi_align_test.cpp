// RoiAlign against a float64 transcription of ONNX Runtime's kernel (onnxruntime/core/providers/
// cpu/object_detection/roialign.cc, the ONNX reference's model): average and max pooling,
// half_pixel and output_half_pixel, a fixed and an adaptive sampling ratio, a spatial scale,
// regions inside, across and beyond the image's edges and smaller than a pixel, a batch index
// outside the batch (zeros), f32 and f16, and misuse.
#include "gpu/ops/roi_align.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

// The four weighted neighbours of the sample at (y, x) of one [h, w] plane, all zero beyond a pixel
// outside it.
std::vector<double> weighted_taps(const float* plane, int64_t h, int64_t w, double y, double x) {
  if (y < -1.0 || y > static_cast<double>(h) || x < -1.0 || x > static_cast<double>(w)) return {0, 0, 0, 0};
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto y_lo = static_cast<int64_t>(y), x_lo = static_cast<int64_t>(x);
  int64_t y_hi = y_lo + 1, x_hi = x_lo + 1;
  if (y_lo >= h - 1) y = static_cast<double>(y_hi = y_lo = h - 1);
  if (x_lo >= w - 1) x = static_cast<double>(x_hi = x_lo = w - 1);
  const double ly = y - static_cast<double>(y_lo), lx = x - static_cast<double>(x_lo), hy = 1 - ly, hx = 1 - lx;
  const auto at = [&](int64_t r, int64_t c) { return static_cast<double>(plane[r * w + c]); };
  return {hy * hx * at(y_lo, x_lo), hy * lx * at(y_lo, x_hi), ly * hx * at(y_hi, x_lo), ly * lx * at(y_hi, x_hi)};
}

double reference(const float* plane, int64_t h, int64_t w, const float* roi, int64_t out_h, int64_t out_w, int64_t i,
                 int64_t j, const ops::RoiAlignParams& p) {
  const double offset = p.half_pixel ? 0.5 : 0.0, scale = p.spatial_scale;
  const double x0 = roi[0] * scale - offset, y0 = roi[1] * scale - offset;
  double roi_w = roi[2] * scale - offset - x0, roi_h = roi[3] * scale - offset - y0;
  if (!p.half_pixel) {
    roi_w = std::max(roi_w, 1.0);
    roi_h = std::max(roi_h, 1.0);
  }
  const double bin_h = roi_h / static_cast<double>(out_h), bin_w = roi_w / static_cast<double>(out_w);
  const int64_t grid_h = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(std::ceil(roi_h / out_h));
  const int64_t grid_w = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(std::ceil(roi_w / out_w));
  double acc = 0;
  bool first = true;
  for (int64_t iy = 0; iy < grid_h; ++iy) {
    const double y = y0 + static_cast<double>(i) * bin_h + (static_cast<double>(iy) + 0.5) * bin_h / grid_h;
    for (int64_t ix = 0; ix < grid_w; ++ix) {
      const double x = x0 + static_cast<double>(j) * bin_w + (static_cast<double>(ix) + 0.5) * bin_w / grid_w;
      const std::vector<double> t = weighted_taps(plane, h, w, y, x);
      if (p.max) {
        const double m = *std::max_element(t.begin(), t.end());
        acc = first ? m : std::max(acc, m);
        first = false;
      } else {
        acc += t[0] + t[1] + t[2] + t[3];
      }
    }
  }
  return p.max ? acc : acc / static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
}

class RoiAlignTest : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(RoiAlignTest, EveryModeAndCoordinateConventionMatchesOnnxRuntime) {
  const DType d = GetParam();
  const int64_t n = 2, c = 3, h = 9, w = 11, oh = 3, ow = 4;
  // Inside, across the right and bottom edges, beyond the top-left corner, smaller than a pixel,
  // the whole image, and one of a batch index outside the batch.
  const std::vector<float> roi_values{1.0f, 2.0f, 7.5f, 6.0f, 6.0f, 4.0f, 13.0f, 11.5f, -3.0f, -2.5f, 1.0f, 0.5f,
                                      3.2f, 3.3f, 3.4f, 3.5f, 0.0f, 0.0f, 10.0f, 8.0f,  2.0f,  2.0f,  5.0f, 5.0f};
  const std::vector<int32_t> batch{0, 1, 1, 0, 1, 2};
  const int64_t r = static_cast<int64_t>(batch.size());
  Tensor tx = upload_f32(rt(), d, {n, c, h, w}, random_floats(static_cast<size_t>(n * c * h * w), 41, -2.0f, 2.0f));
  Tensor trois = upload_f32(rt(), d, {r, 4}, roi_values);
  Tensor tb = Tensor::from_host(rt(), DType::kI32, {r}, batch.data(), batch.size() * 4).value();
  const std::vector<float> x = download_f32(rt(), tx), rois = download_f32(rt(), trois);
  for (const bool max : {false, true}) {
    for (const bool half_pixel : {false, true}) {
      for (const int64_t ratio : {0, 2}) {
        for (const float scale : {1.0f, 0.5f}) {
          const ops::RoiAlignParams p{scale, ratio, half_pixel, max};
          Tensor out = poisoned(rt(), d, {r, c, oh, ow});
          Graph g(rt());
          const Status s = ops::roi_align(g, tx, trois, tb, out, p);
          ASSERT_TRUE(s.is_ok()) << s.to_string();
          ASSERT_TRUE(g.run().is_ok());
          const std::vector<float> got = download_f32(rt(), out);
          double worst = 0;
          for (int64_t e = 0; e < r * c * oh * ow; ++e) {
            const int64_t j = e % ow, i = e / ow % oh, ch = e / (ow * oh) % c, k = e / (ow * oh * c);
            const int32_t b = batch[static_cast<size_t>(k)];
            const double want =
                b >= n ? 0.0 : reference(x.data() + (b * c + ch) * h * w, h, w, rois.data() + k * 4, oh, ow, i, j, p);
            worst = std::max(worst, std::isfinite(got[e]) ? std::abs(got[e] - want) : INFINITY);
          }
          EXPECT_LE(worst, d == DType::kF32 ? 2e-5 : 4e-3)
              << (max ? "max" : "avg") << (half_pixel ? " half_pixel" : " output_half_pixel") << ", ratio " << ratio
              << ", scale " << scale;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, RoiAlignTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class RoiAlignMisuseTest : public GpuTest {};

TEST_F(RoiAlignMisuseTest, BadShapesAndDtypesAreRefused) {
  Graph g(rt());
  auto t = [&](DType d, const Shape& s) { return Tensor::empty(rt(), d, s).value(); };
  const auto run = [&](const Tensor& x, const Tensor& rois, const Tensor& b, const Tensor& out) {
    return ops::roi_align(g, x, rois, b, out, {}).code();
  };
  const DType f = DType::kF32, i = DType::kI32;
  EXPECT_EQ(run(t(f, {1, 2, 3, 4}), t(f, {5, 3}), t(i, {5}), t(f, {5, 2, 1, 1})), StatusCode::kInvalidArgument);
  EXPECT_EQ(run(t(f, {1, 2, 3, 4}), t(f, {5, 4}), t(i, {4}), t(f, {5, 2, 1, 1})), StatusCode::kInvalidArgument);
  EXPECT_EQ(run(t(f, {1, 2, 3, 4}), t(f, {5, 4}), t(i, {5}), t(f, {5, 3, 1, 1})), StatusCode::kInvalidArgument);
  EXPECT_EQ(run(t(f, {2, 3, 4}), t(f, {5, 4}), t(i, {5}), t(f, {5, 2, 1, 1})), StatusCode::kInvalidArgument);
  EXPECT_EQ(run(t(f, {1, 2, 3, 4}), t(DType::kF16, {5, 4}), t(i, {5}), t(f, {5, 2, 1, 1})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(run(t(f, {1, 2, 3, 4}), t(f, {5, 4}), t(f, {5}), t(f, {5, 2, 1, 1})), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
