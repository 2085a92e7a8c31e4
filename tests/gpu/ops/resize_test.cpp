// ONNX Resize against a transcription of the ONNX reference (onnx/backend/test/case/node/resize.py:
// interpolate_1d_with_x over an edge-padded axis, neighbours found by sorting every index by
// distance, applied along W for every row and then along H), in float64: every mode, coordinate
// transformation and nearest rounding, up- and downsampling, scales that are not out/in, cubic
// with exclude_outside, tf_crop_and_resize's extrapolation.
#include "gpu/ops/resize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT
using ops::NearestRounding;
using ops::ResizeCoordinates;
using ops::ResizeMode;

std::vector<double> coeffs(const ops::ResizeParams& p, double ratio) {
  if (p.mode == ResizeMode::kLinear) return {1 - ratio, ratio};
  if (p.mode == ResizeMode::kNearest) {
    if (ratio == std::floor(ratio)) return {0, 1};
    switch (p.nearest) {
      case NearestRounding::kRoundPreferFloor:
        return {double(ratio <= 0.5), double(ratio > 0.5)};
      case NearestRounding::kRoundPreferCeil:
        return {double(ratio < 0.5), double(ratio >= 0.5)};
      case NearestRounding::kFloor:
        return {1, 0};
      case NearestRounding::kCeil:
        return {0, 1};
    }
  }
  const double A = p.cubic_a;
  return {((A * (ratio + 1) - 5 * A) * (ratio + 1) + 8 * A) * (ratio + 1) - 4 * A,
          ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1,
          ((A + 2) * (1 - ratio) - (A + 3)) * (1 - ratio) * (1 - ratio) + 1,
          ((A * ((1 - ratio) + 1) - 5 * A) * ((1 - ratio) + 1) + 8 * A) * ((1 - ratio) + 1) - 4 * A};
}

// interpolate_1d_with_x: data along one axis, output index x.
double interpolate_1d(const std::vector<double>& data, const ops::ResizeParams& p, const ops::ResizeAxis& a,
                      int64_t x) {
  const double in = double(data.size()), out_w = a.scale * in, xd = double(x);
  double x_ori = 0;
  switch (p.coordinates) {
    case ResizeCoordinates::kAlignCorners:
      x_ori = out_w == 1 ? 0 : xd * (in - 1) / (out_w - 1);
      break;
    case ResizeCoordinates::kAsymmetric:
      x_ori = xd / a.scale;
      break;
    case ResizeCoordinates::kTfCropAndResize:
      x_ori = out_w == 1 ? (a.roi_end - a.roi_start) * (in - 1) / 2
                         : xd * (a.roi_end - a.roi_start) * (in - 1) / (out_w - 1);
      x_ori += a.roi_start * (in - 1);
      if (x_ori < 0 || x_ori > in - 1) return p.extrapolation_value;
      break;
    case ResizeCoordinates::kPytorchHalfPixel:
      x_ori = out_w == 1 ? -0.5 : (xd + 0.5) / a.scale - 0.5;
      break;
    case ResizeCoordinates::kHalfPixel:
      x_ori = (xd + 0.5) / a.scale - 0.5;
      break;
    case ResizeCoordinates::kTfHalfPixelForNn:
      x_ori = (xd + 0.5) / a.scale;
      break;
  }
  const double ratio = x_ori == std::floor(x_ori) ? 1.0 : x_ori - std::floor(x_ori);
  std::vector<double> c = coeffs(p, ratio);
  const int64_t n = static_cast<int64_t>(c.size()), pad = (n + 1) / 2;
  // np.pad(data, pad, mode='edge'), then the n indices nearest x_ori + pad.
  std::vector<double> padded;
  for (int64_t i = -pad; i < int64_t(data.size()) + pad; ++i) {
    padded.push_back(data[static_cast<size_t>(std::clamp<int64_t>(i, 0, int64_t(data.size()) - 1))]);
  }
  const double xp = x_ori + double(pad);
  std::vector<int64_t> idx(padded.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [xp](int64_t l, int64_t r) {
    const double dl = std::abs(xp - double(l)), dr = std::abs(xp - double(r));
    return dl != dr ? dl < dr : l < r;
  });
  idx.resize(static_cast<size_t>(n));
  std::sort(idx.begin(), idx.end());
  if (p.exclude_outside) {
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t orig = idx[static_cast<size_t>(k)] - pad;
      if (orig < 0 || orig >= int64_t(data.size())) c[static_cast<size_t>(k)] = 0;
      sum += c[static_cast<size_t>(k)];
    }
    for (double& v : c) v /= sum;
  }
  double r = 0;
  for (int64_t k = 0; k < n; ++k)
    r += c[static_cast<size_t>(k)] * padded[static_cast<size_t>(idx[static_cast<size_t>(k)])];
  return r;
}

class ResizeTest : public GpuTest, public ::testing::WithParamInterface<DType> {
 protected:
  void check(int64_t planes, const ops::ResizeAxis& ay, const ops::ResizeAxis& ax, const ops::ResizeParams& p,
             uint32_t seed) {
    const DType d = GetParam();
    const Shape s{planes, ay.in, ax.in}, o{planes, ay.out, ax.out};
    Tensor in = upload_f32(rt(), d, s, random_floats(shape_numel(s), seed));
    Tensor out = poisoned(rt(), d, o);
    Graph g(rt());
    Status st = ops::resize(g, in, out, p, ay, ax);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_TRUE(g.run().is_ok());
    const auto x = download_f32(rt(), in);
    const auto got = download_f32(rt(), out);
    double worst = 0;
    for (int64_t pl = 0; pl < planes; ++pl)
      for (int64_t oy = 0; oy < ay.out; ++oy)
        for (int64_t ox = 0; ox < ax.out; ++ox) {
          // Along W for every row, then along H.
          std::vector<double> column;
          for (int64_t r = 0; r < ay.in; ++r) {
            std::vector<double> row(x.begin() + (pl * ay.in + r) * ax.in, x.begin() + (pl * ay.in + r + 1) * ax.in);
            column.push_back(interpolate_1d(row, p, ax, ox));
          }
          const double want = interpolate_1d(column, p, ay, oy);
          const float got_v = got[static_cast<size_t>((pl * ay.out + oy) * ax.out + ox)];
          ASSERT_TRUE(std::isfinite(got_v)) << "unwritten output";
          worst = std::max(worst, std::abs(got_v - want));  // inputs in [−1, 1]
        }
    const double tol = d == DType::kF16 ? 1e-3 : (p.mode == ResizeMode::kNearest ? 0.0 : 2e-6);
    EXPECT_LE(worst, tol) << "mode " << int(p.mode) << " coordinates " << int(p.coordinates) << " nearest "
                          << int(p.nearest) << " " << ay.in << "x" << ax.in << " -> " << ay.out << "x" << ax.out;
  }
};

TEST_P(ResizeTest, EveryModeAndCoordinateTransformation) {
  uint32_t seed = 0;
  for (ResizeMode mode : {ResizeMode::kNearest, ResizeMode::kLinear, ResizeMode::kCubic}) {
    for (ResizeCoordinates c :
         {ResizeCoordinates::kHalfPixel, ResizeCoordinates::kPytorchHalfPixel, ResizeCoordinates::kAlignCorners,
          ResizeCoordinates::kAsymmetric, ResizeCoordinates::kTfHalfPixelForNn}) {
      ops::ResizeParams p;
      p.mode = mode;
      p.coordinates = c;
      check(3, {4, 9, 9.0 / 4}, {5, 3, 3.0 / 5}, p, ++seed);  // up in y, down in x (sizes)
      check(2, {6, 6, 1.0}, {4, 10, 2.5}, p, ++seed);
      check(1, {5, 1, 0.2}, {7, 7, 1.0}, p, ++seed);  // one output row
    }
  }
}

TEST_P(ResizeTest, NearestRoundingModes) {
  uint32_t seed = 30;
  for (NearestRounding n : {NearestRounding::kRoundPreferFloor, NearestRounding::kRoundPreferCeil,
                            NearestRounding::kFloor, NearestRounding::kCeil}) {
    ops::ResizeParams p;
    p.nearest = n;
    for (ResizeCoordinates c : {ResizeCoordinates::kHalfPixel, ResizeCoordinates::kAsymmetric}) {
      p.coordinates = c;
      check(2, {4, 8, 2.0}, {6, 9, 1.5}, p, ++seed);  // ties at exactly ½ in both directions
      check(1, {8, 3, 3.0 / 8}, {3, 7, 7.0 / 3}, p, ++seed);
    }
  }
}

TEST_P(ResizeTest, ScalesThatAreNotOutOverIn) {
  ops::ResizeParams p;
  p.mode = ResizeMode::kLinear;
  check(2, {5, 6, 1.3}, {7, 5, 0.8}, p, 50);  // ⌊5·1.3⌋ = 6, ⌊7·0.8⌋ = 5
  p.mode = ResizeMode::kCubic;
  check(1, {5, 6, 1.3}, {7, 5, 0.8}, p, 51);
}

TEST_P(ResizeTest, CubicWithExcludeOutsideAndAnotherA) {
  ops::ResizeParams p;
  p.mode = ResizeMode::kCubic;
  p.cubic_a = -0.5;
  p.exclude_outside = true;
  check(2, {4, 8, 2.0}, {6, 3, 0.5}, p, 60);
}

TEST_P(ResizeTest, TfCropAndResizeExtrapolates) {
  ops::ResizeParams p;
  p.mode = ResizeMode::kLinear;
  p.coordinates = ResizeCoordinates::kTfCropAndResize;
  p.extrapolation_value = 10.0f;
  check(2, {4, 3, 0.75, 0.4, 0.6}, {4, 5, 1.25, -0.2, 1.3}, p, 70);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ResizeTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class ResizeMiscTest : public GpuTest {};

TEST_F(ResizeMiscTest, LeadingAxesMustAgreeAndTablesMatch) {
  auto t = [&](const Shape& s) { return Tensor::empty(rt(), DType::kF32, s).value(); };
  Graph g(rt());
  ops::ResizeParams p;
  EXPECT_FALSE(ops::resize(g, t({2, 3, 4}), t({3, 3, 4}), p, {3, 3}, {4, 4}).is_ok());
  EXPECT_FALSE(ops::resize(g, t({2, 3, 4}), t({2, 6, 4}), p, {3, 5, 5.0 / 3}, {4, 4}).is_ok());
  EXPECT_TRUE(ops::resize(g, t({2, 3, 4}), t({2, 6, 4}), p, {3, 6, 2.0}, {4, 4}).is_ok());
}

}  // namespace
}  // namespace recon::gpu
