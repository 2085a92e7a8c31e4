// Inference BatchNorm against a float64 reference on the stored inputs: NCHW and [N, C] inputs
// with ragged sizes, with and without the affine parameters.
#include "gpu/ops/batch_norm.h"

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

class BatchNormTest : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(BatchNormTest, MatchesFloat64OnNchwAndFlatInputs) {
  const DType d = GetParam();
  struct Case {
    Shape shape;
    bool affine;
  };
  uint32_t seed = 500;
  for (const Case& c :
       {Case{{2, 3, 5, 7}, true}, Case{{3, 4}, true}, Case{{1, 5, 33}, false}, Case{{2, 17, 9, 11}, true}}) {
    const int64_t n = shape_numel(c.shape), ch = c.shape[1], spatial = n / (c.shape[0] * ch);
    Tensor x = upload_f32(rt(), d, c.shape, random_floats(n, ++seed, -3.0f, 3.0f));
    Tensor mean = upload_f32(rt(), d, {ch}, random_floats(ch, ++seed, -1.0f, 1.0f));
    Tensor var = upload_f32(rt(), d, {ch}, random_floats(ch, ++seed, 0.1f, 2.0f));
    Tensor w = upload_f32(rt(), d, {ch}, random_floats(ch, ++seed, 0.5f, 1.5f));
    Tensor b = upload_f32(rt(), d, {ch}, random_floats(ch, ++seed, -1.0f, 1.0f));
    Tensor out = poisoned(rt(), d, c.shape);
    Graph g(rt());
    ASSERT_TRUE(ops::batch_norm(g, x, mean, var, c.affine ? std::optional<Arg>(w) : std::nullopt,
                                c.affine ? std::optional<Arg>(b) : std::nullopt, out, 1e-5f)
                    .is_ok());
    ASSERT_TRUE(g.run().is_ok());
    auto sx = download_f32(rt(), x), sm = download_f32(rt(), mean), sv = download_f32(rt(), var),
         sw = download_f32(rt(), w), sb = download_f32(rt(), b);
    std::vector<double> want(n);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = (i / spatial) % ch;
      double v = (sx[i] - double(sm[k])) / std::sqrt(double(sv[k]) + 1e-5);
      want[i] = c.affine ? v * sw[k] + sb[k] : v;
    }
    EXPECT_LE(max_error(download_f32(rt(), out), want), d == DType::kF32 ? 1e-5 : 2e-3) << shape_string(c.shape);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, BatchNormTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class BatchNormMisuseTest : public GpuTest {};

TEST_F(BatchNormMisuseTest, RefusesWrongShapesAndDtypes) {
  Tensor x = Tensor::empty(rt(), DType::kF32, {2, 3, 4}).value();
  Tensor out = Tensor::empty(rt(), DType::kF32, {2, 3, 4}).value();
  Tensor p3 = Tensor::empty(rt(), DType::kF32, {3}).value();
  Tensor p4 = Tensor::empty(rt(), DType::kF32, {4}).value();
  Tensor p3h = Tensor::empty(rt(), DType::kF16, {3}).value();
  Tensor flat = Tensor::empty(rt(), DType::kF32, {24}).value();
  Graph g(rt());
  EXPECT_EQ(ops::batch_norm(g, x, p4, p3, std::nullopt, std::nullopt, out, 1e-5f).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::batch_norm(g, x, p3, p3h, std::nullopt, std::nullopt, out, 1e-5f).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::batch_norm(g, x, p3, p3, p4, std::nullopt, out, 1e-5f).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::batch_norm(g, flat, p3, p3, std::nullopt, std::nullopt, flat, 1e-5f).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::batch_norm(g, x, p3, p3, std::nullopt, std::nullopt, flat, 1e-5f).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
