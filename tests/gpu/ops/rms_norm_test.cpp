// RMSNorm against a float64 reference on the stored inputs: ragged rows, with and without weight,
// and rows with a large offset.
#include "gpu/ops/rms_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

double max_error(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    worst = std::max(worst, std::abs(got[i] - want[i]) / std::max(std::abs(want[i]), 1.0));
  }
  return worst;
}

class RmsNormTest : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(RmsNormTest, MatchesFloat64OnRaggedShapes) {
  const DType d = GetParam();
  struct Case {
    Shape shape;
    bool weight;
    float lo, hi;
  };
  uint32_t seed = 40;
  for (const Case& c : {Case{{3, 5, 77}, true, -2, 3}, Case{{2, 1030}, false, -1, 1}, Case{{4, 1}, true, -1, 1},
                        Case{{9, 300}, true, 99, 101},
                        // Whole 16-byte words (the wide path, 1 to 8 words per invocation) and not.
                        Case{{5, 1024}, true, -2, 3}, Case{{3, 768}, false, -2, 3}, Case{{2, 8192}, true, -1, 1},
                        Case{{3, 16}, true, -1, 1}, Case{{3, 20}, true, -1, 1}}) {
    const int64_t cols = c.shape.back(), n = shape_numel(c.shape);
    Tensor x = upload_f32(rt(), d, c.shape, random_floats(n, ++seed, c.lo, c.hi));
    Tensor w = upload_f32(rt(), d, {cols}, random_floats(cols, ++seed, 0.5f, 1.5f));
    Tensor out = poisoned(rt(), d, c.shape);
    Graph g(rt());
    ASSERT_TRUE(ops::rms_norm(g, x, c.weight ? std::optional<Arg>(w) : std::nullopt, out, 1e-6f).is_ok());
    ASSERT_TRUE(g.run().is_ok());
    auto sx = download_f32(rt(), x), sw = download_f32(rt(), w);
    std::vector<double> want(n);
    for (int64_t r = 0; r < n / cols; ++r) {
      double ss = 0;
      for (int64_t i = 0; i < cols; ++i) ss += double(sx[r * cols + i]) * sx[r * cols + i];
      const double inv = 1.0 / std::sqrt(ss / cols + 1e-6);
      for (int64_t i = 0; i < cols; ++i) want[r * cols + i] = sx[r * cols + i] * inv * (c.weight ? sw[i] : 1.0);
    }
    EXPECT_LE(max_error(download_f32(rt(), out), want), d == DType::kF32 ? 1e-5 : 4e-3) << shape_string(c.shape);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, RmsNormTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class RmsNormMisuseTest : public GpuTest {};

TEST_F(RmsNormMisuseTest, RefusesWrongShapesAndDtypes) {
  Tensor x = Tensor::empty(rt(), DType::kF32, {4, 8}).value();
  Tensor out = Tensor::empty(rt(), DType::kF32, {4, 9}).value();
  Tensor ok_out = Tensor::empty(rt(), DType::kF32, {4, 8}).value();
  Tensor w = Tensor::empty(rt(), DType::kF32, {4}).value();
  Graph g(rt());
  EXPECT_EQ(ops::rms_norm(g, x, std::nullopt, out, 1e-6f).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::rms_norm(g, x, w, ok_out, 1e-6f).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::rms_norm(g, x, std::nullopt, ok_out, -1e-6f).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
