// Det against float64 Gaussian elimination with partial pivoting: random matrices of sizes 1 to 7
// in a batch, a matrix that needs a row swap at the first step (a zero in the corner), a singular
// matrix (exactly 0), permutation matrices (±1), f32 and f16, and misuse.
#include "gpu/ops/det.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

double reference_det(std::vector<double> a, int64_t n) {
  double det = 1;
  for (int64_t k = 0; k < n; ++k) {
    int64_t pivot = k;
    for (int64_t r = k + 1; r < n; ++r) {
      if (std::abs(a[r * n + k]) > std::abs(a[pivot * n + k])) pivot = r;
    }
    if (a[pivot * n + k] == 0) return 0;
    if (pivot != k) {
      for (int64_t c = 0; c < n; ++c) std::swap(a[k * n + c], a[pivot * n + c]);
      det = -det;
    }
    det *= a[k * n + k];
    for (int64_t r = k + 1; r < n; ++r) {
      const double f = a[r * n + k] / a[k * n + k];
      for (int64_t c = k; c < n; ++c) a[r * n + c] -= f * a[k * n + c];
    }
  }
  return det;
}

// Hadamard's bound on |det|: the product of the rows' norms, the scale errors are measured against.
double hadamard(const std::vector<double>& a, int64_t n) {
  double bound = 1;
  for (int64_t r = 0; r < n; ++r) {
    double sq = 0;
    for (int64_t c = 0; c < n; ++c) sq += a[r * n + c] * a[r * n + c];
    bound *= std::sqrt(sq);
  }
  return std::max(bound, 1e-30);
}

// Runs det over `matrices` ([batch, n, n]) and returns the worst error relative to Hadamard's bound.
double worst_error(Runtime& rt, DType d, int64_t batch, int64_t n, const std::vector<float>& matrices) {
  Tensor in = upload_f32(rt, d, {batch, n, n}, matrices);
  const std::vector<float> stored = download_f32(rt, in);
  Tensor out = poisoned(rt, d, {batch});
  Tensor work = Tensor::empty(rt, DType::kF32, {batch, n, n}).value();
  Graph g(rt);
  EXPECT_TRUE(ops::det(g, in, out, work).is_ok());
  EXPECT_TRUE(g.run().is_ok());
  const std::vector<float> got = download_f32(rt, out);
  double worst = 0;
  for (int64_t m = 0; m < batch; ++m) {
    const std::vector<double> a(stored.begin() + m * n * n, stored.begin() + (m + 1) * n * n);
    const double want = reference_det(a, n);
    const double err = std::abs(got[static_cast<size_t>(m)] - want) / hadamard(a, n);
    worst = std::max(worst, std::isfinite(got[static_cast<size_t>(m)]) ? err : INFINITY);
  }
  return worst;
}

class DetTest : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(DetTest, RandomMatricesOfEverySmallSizeMatchFloat64) {
  const double tolerance = GetParam() == DType::kF32 ? 1e-5 : 2e-3;
  for (int64_t n = 1; n <= 7; ++n) {
    const int64_t batch = 9;
    const auto values = random_floats(static_cast<size_t>(batch * n * n), static_cast<uint32_t>(50 + n), -2.0f, 2.0f);
    EXPECT_LE(worst_error(rt(), GetParam(), batch, n, values), tolerance) << "n = " << n;
  }
}

TEST_P(DetTest, PivotingSingularAndPermutationMatricesAreExact) {
  const std::vector<float> m{0, 2, 1, 3, 1, 1, 0, 1, 0,   // a zero corner: a row swap first
                             1, 2, 3, 2, 4, 6, 0, 1, 1,   // rows 1 and 2 dependent: 0
                             0, 1, 0, 0, 0, 1, 1, 0, 0,   // a cyclic permutation: 1
                             0, 1, 0, 1, 0, 0, 0, 0, 1};  // a transposition: -1
  Tensor in = upload_f32(rt(), GetParam(), {4, 3, 3}, m);
  Tensor out = poisoned(rt(), GetParam(), {4});
  Tensor work = Tensor::empty(rt(), DType::kF32, {4, 3, 3}).value();
  Graph g(rt());
  ASSERT_TRUE(ops::det(g, in, out, work).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  const std::vector<float> got = download_f32(rt(), out);
  for (int64_t k = 0; k < 4; ++k) {
    const std::vector<double> a(m.begin() + k * 9, m.begin() + (k + 1) * 9);
    EXPECT_EQ(got[static_cast<size_t>(k)], reference_det(a, 3)) << "matrix " << k;
  }
  EXPECT_EQ(got[1], 0.0f);
  EXPECT_EQ(got[2], 1.0f);
  EXPECT_EQ(got[3], -1.0f);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, DetTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class DetMisuseTest : public GpuTest {};

TEST_F(DetMisuseTest, BadShapesAndDtypesAreRefused) {
  Graph g(rt());
  auto t = [&](DType d, const Shape& s) { return Tensor::empty(rt(), d, s).value(); };
  const DType f = DType::kF32;
  EXPECT_EQ(ops::det(g, t(f, {2, 3, 4}), t(f, {2}), t(f, {2, 3, 4})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::det(g, t(f, {2, 3, 3}), t(f, {3}), t(f, {2, 3, 3})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::det(g, t(f, {2, 3, 3}), t(f, {2}), t(f, {2, 3})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::det(g, t(f, {2, 3, 3}), t(f, {2}), t(DType::kF16, {2, 3, 3})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::det(g, t(DType::kI32, {2, 3, 3}), t(DType::kI32, {2}), t(f, {2, 3, 3})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::det(g, t(f, {3}), t(f, {}), t(f, {3})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
