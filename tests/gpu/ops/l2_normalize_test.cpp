// L2 normalisation against a float64 reference on the stored inputs: MASt3R's 24-d descriptors
// (no eps), ragged rows, the eps clamp on a zero row, and a tensor larger than one binding.
#include "gpu/ops/l2_normalize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gpu/ops/layout.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

std::vector<double> reference(const std::vector<float>& x, int64_t cols, double eps) {
  std::vector<double> out(x.size());
  for (size_t r = 0; r < x.size() / cols; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < cols; ++i) ss += double(x[r * cols + i]) * x[r * cols + i];
    const double norm = std::max(std::sqrt(ss), eps);
    for (int64_t i = 0; i < cols; ++i) out[r * cols + i] = x[r * cols + i] / norm;
  }
  return out;
}

class L2NormalizeTest : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(L2NormalizeTest, MatchesFloat64OnDescriptorsAndRaggedRows) {
  const DType d = GetParam();
  uint32_t seed = 300;
  for (const Shape& shape : {Shape{2, 7, 9, 24}, Shape{5, 1}, Shape{3, 100}, Shape{2, 513},
                             // Whole 16-byte words (the wide path) at 1 to 8 words per invocation.
                             Shape{4, 1024}, Shape{3, 16}, Shape{2, 8192}}) {
    const int64_t cols = shape.back(), n = shape_numel(shape);
    Tensor x = upload_f32(rt(), d, shape, random_floats(n, ++seed, -3.0f, 2.0f));
    Tensor out = poisoned(rt(), d, shape);
    Graph g(rt());
    ASSERT_TRUE(ops::l2_normalize(g, x, out).is_ok());
    ASSERT_TRUE(g.run().is_ok());
    auto want = reference(download_f32(rt(), x), cols, 0.0);
    EXPECT_LE(max_relative_error(download_f32(rt(), out), want, 1.0), d == DType::kF32 ? 1e-5 : 2e-3)
        << shape_string(shape);
  }
}

TEST_P(L2NormalizeTest, EpsClampsZeroRowsAndNoEpsGivesNanLikeTheReference) {
  const DType d = GetParam();
  std::vector<float> v = random_floats(3 * 24, 9, -1.0f, 1.0f);
  for (int i = 24; i < 48; ++i) v[i] = 0.0f;  // row 1 is all zero
  Tensor x = upload_f32(rt(), d, {3, 24}, v);
  Tensor with_eps = poisoned(rt(), d, {3, 24}), no_eps = poisoned(rt(), d, {3, 24});
  Graph g(rt());
  ASSERT_TRUE(ops::l2_normalize(g, x, with_eps, 1e-12f).is_ok());
  ASSERT_TRUE(ops::l2_normalize(g, x, no_eps, 0.0f).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  auto a = download_f32(rt(), with_eps), b = download_f32(rt(), no_eps);
  auto want = reference(download_f32(rt(), x), 24, 1e-12);
  EXPECT_LE(max_relative_error(a, want, 1.0), d == DType::kF32 ? 1e-5 : 2e-3);
  for (int i = 24; i < 48; ++i) EXPECT_TRUE(std::isnan(b[i])) << i;
  for (int i = 0; i < 24; ++i) EXPECT_EQ(a[i], b[i]);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, L2NormalizeTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class L2NormalizeSplitTest : public GpuTest {};

TEST_F(L2NormalizeSplitTest, SplitsTensorsLargerThanOneBinding) {
  // 2^27 bytes is one binding on lavapipe (layout.h); take a little more, in long rows so that
  // lavapipe runs few workgroups (fp32 only: the split is dtype-independent host code).
  const int64_t cols = 4096;
  const int64_t rows = (int64_t{1} << 27) / (cols * 4) + 7;
  std::vector<float> v = random_floats(rows * cols, 5, -1.0f, 1.0f);
  Tensor x = upload_f32(rt(), DType::kF32, {rows, cols}, v);
  Tensor out = poisoned(rt(), DType::kF32, {rows, cols});
  ASSERT_GT(x.bytes(), size_t{1} << 27);
  Graph g(rt());
  ASSERT_TRUE(ops::l2_normalize(g, x, out).is_ok());
  if (x.bytes() > ops::max_binding_bytes()) {
    EXPECT_GE(g.dispatch_count(), 2u);
  }
  ASSERT_TRUE(g.run().is_ok());
  auto want = reference(download_f32(rt(), x), cols, 0.0);
  EXPECT_LE(max_relative_error(download_f32(rt(), out), want, 1.0), 1e-5);
}

class L2NormalizeMisuseTest : public GpuTest {};

TEST_F(L2NormalizeMisuseTest, RefusesWrongShapesDtypesAndEps) {
  Tensor x = Tensor::empty(rt(), DType::kF32, {4, 8}).value();
  Tensor out_h = Tensor::empty(rt(), DType::kF16, {4, 8}).value();
  Tensor out = Tensor::empty(rt(), DType::kF32, {4, 8}).value();
  Tensor xi = Tensor::empty(rt(), DType::kI32, {4, 8}).value();
  Graph g(rt());
  EXPECT_EQ(ops::l2_normalize(g, x, out_h).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::l2_normalize(g, xi, xi).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::l2_normalize(g, x, out, -1.0f).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
