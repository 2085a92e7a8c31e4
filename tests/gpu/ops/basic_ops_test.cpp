// fill, copy, add and the tiled matmul against exact CPU math, on shapes that are not multiples
// of the tile or workgroup sizes, with poisoned outputs.
#include <gtest/gtest.h>

#include "gpu/ops/elementwise_basic.h"
#include "gpu/ops/matmul_tiled.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT
class BasicOpsTest : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(BasicOpsTest, FillWritesEveryElement) {
  const DType d = GetParam();
  Tensor t = poisoned(rt(), d, {3, 331});
  Graph g(rt());
  ASSERT_TRUE(ops::fill(g, t, 0.75f).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  for (float v : download_f32(rt(), t)) ASSERT_EQ(v, 0.75f);
}

TEST_P(BasicOpsTest, AddMatchesCpuOnRandomData) {
  const DType d = GetParam();
  const Shape shape{7, 129};
  auto a = random_floats(7 * 129, 1), b = random_floats(7 * 129, 2);
  Tensor ta = upload_f32(rt(), d, shape, a), tb = upload_f32(rt(), d, shape, b);
  Tensor out = poisoned(rt(), d, shape);
  Graph g(rt());
  ASSERT_TRUE(ops::add(g, ta, tb, out).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  // The reference adds the values as stored (fp16-rounded for f16), in float64.
  auto sa = download_f32(rt(), ta), sb = download_f32(rt(), tb);
  std::vector<double> want(a.size());
  for (size_t i = 0; i < a.size(); ++i) want[i] = double(sa[i]) + double(sb[i]);
  EXPECT_LE(max_relative_error(download_f32(rt(), out), want), d == DType::kF32 ? 1e-6 : 1e-3);
}

TEST_P(BasicOpsTest, MatmulMatchesFloat64ReferenceOnRaggedShapes) {
  const DType d = GetParam();
  struct Case {
    int64_t m, k, n;
    uint32_t tile;
  };
  for (Case c : {Case{1, 1, 1, 16}, Case{17, 33, 9, 16}, Case{64, 48, 31, 8}, Case{5, 70, 40, 16}}) {
    auto a = random_floats(c.m * c.k, 100 + c.m), b = random_floats(c.k * c.n, 200 + c.n);
    Tensor ta = upload_f32(rt(), d, {c.m, c.k}, a), tb = upload_f32(rt(), d, {c.k, c.n}, b);
    Tensor tc = poisoned(rt(), d, {c.m, c.n});
    Graph g(rt());
    ASSERT_TRUE(ops::matmul_tiled(g, ta, tb, tc, c.tile).is_ok());
    ASSERT_TRUE(g.run().is_ok());
    auto sa = download_f32(rt(), ta), sb = download_f32(rt(), tb);
    std::vector<double> want(c.m * c.n, 0.0), scale(c.m * c.n, 0.0);
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j)
        for (int64_t k = 0; k < c.k; ++k) {
          want[i * c.n + j] += double(sa[i * c.k + k]) * double(sb[k * c.n + j]);
          scale[i * c.n + j] += std::abs(double(sa[i * c.k + k]) * double(sb[k * c.n + j]));
        }
    // Error relative to Σ|a·b|, the natural bound of a dot product's rounding error: fp32 sums
    // in another order; fp16 adds the rounding of the stored result.
    auto got = download_f32(rt(), tc);
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << "element " << i << " unwritten";
      worst = std::max(worst, std::abs(got[i] - want[i]) / (scale[i] + 1e-30));
    }
    EXPECT_LE(worst, d == DType::kF32 ? 1e-6 : 1e-3) << c.m << "x" << c.k << "x" << c.n;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, BasicOpsTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class CopyOpTest : public GpuTest {};

TEST_F(CopyOpTest, ShaderCopyMovesBytesExactlyOnBothPaths) {
  // Whole 16-byte words (4, 1000, and more words than the grid-stride kernel has invocations) and
  // 4-byte words (1001, 70001).
  for (int64_t n : {int64_t{4}, int64_t{1000}, int64_t{1001}, int64_t{70001}, int64_t{(1 << 21) + 16}}) {
    std::vector<float> v = random_floats(n, static_cast<uint32_t>(n));
    Tensor src = upload_f32(rt(), DType::kF32, {n}, v);
    Tensor dst = poisoned(rt(), DType::kF32, {n});
    Graph g(rt());
    ASSERT_TRUE(ops::copy(g, src, dst).is_ok());
    ASSERT_TRUE(g.run().is_ok());
    EXPECT_EQ(download_f32(rt(), dst), v) << n;
  }
}

TEST_F(CopyOpTest, MismatchedSizesAreRefused) {
  Tensor a = Tensor::empty(rt(), DType::kF32, {8}).value();
  Tensor b = Tensor::empty(rt(), DType::kF32, {9}).value();
  Graph g(rt());
  EXPECT_EQ(ops::copy(g, a, b).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::add(g, a, b, a).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::matmul_tiled(g, a, b, a).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
