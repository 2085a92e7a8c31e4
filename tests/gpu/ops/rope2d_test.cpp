// MASt3R's 2-D RoPE against the spec's formula (§3.2) evaluated by hand in float64: hand-computed
// values for tiny heads, then random heads at column offsets inside wider rows (the packed qkv
// layout), long grids (large angles) and untouched columns left bit-identical.
#include "gpu/ops/rope2d.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

// The spec's formula, float64, in place on a [B, N, C] host copy.
void rope_reference(std::vector<double>& x, int64_t batch, int64_t tokens, int64_t cols, int64_t col_offset,
                    int64_t heads, int64_t d, int64_t grid_w, double base = 100.0) {
  const int64_t q = d / 4;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t n = 0; n < tokens; ++n) {
      const double pos[2] = {double(n / grid_w), double(n % grid_w)};  // (y, x)
      for (int64_t h = 0; h < heads; ++h) {
        double* t = &x[(b * tokens + n) * cols + col_offset + h * d];
        for (int half = 0; half < 2; ++half) {
          double* u = t + half * 2 * q;
          for (int64_t j = 0; j < q; ++j) {
            const double theta = pos[half] * std::pow(base, -double(j) / double(q));
            const double a = u[j], bb = u[j + q];
            u[j] = a * std::cos(theta) - bb * std::sin(theta);
            u[j + q] = bb * std::cos(theta) + a * std::sin(theta);
          }
        }
      }
    }
  }
}

class Rope2dTest : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(Rope2dTest, MatchesHandComputedValuesForTinyHeads) {
  const DType d = GetParam();
  // One item, grid 2x3; token 5 sits at (y, x) = (1, 2). D = 4: one pair per half, ω_0 = 1.
  // D = 8 adds j = 1 with ω_1 = 100^(−1/2) = 0.1.
  std::vector<float> v(6 * 12, 0.0f);
  float* t4 = &v[5 * 12];  // head 0, D = 4, at column 0: t = (1, 0, 0, 1)
  t4[0] = 1.0f;
  t4[3] = 1.0f;
  float* t8 = &v[5 * 12 + 4];  // columns 4..11: a D = 8 head, t = (0, 1, 0, 0, 0, 0, 0, 1)
  t8[1] = 1.0f;
  t8[7] = 1.0f;
  Tensor x4 = upload_f32(rt(), d, {1, 6, 12}, v), x8 = upload_f32(rt(), d, {1, 6, 12}, v);
  Graph g(rt());
  ASSERT_TRUE(ops::rope2d(g, x4, 0, 1, 4, {2, 3}).is_ok());
  ASSERT_TRUE(ops::rope2d(g, x8, 4, 1, 8, {2, 3}).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  const auto r4 = download_f32(rt(), x4), r8 = download_f32(rt(), x8);
  const double tol = d == DType::kF32 ? 1e-6 : 1e-3;
  // D = 4: y-half (t0, t1) rotated by θ = 1: (cos 1, sin 1); x-half (t2, t3) = (0, 1) by θ = 2: (−sin 2, cos 2).
  EXPECT_NEAR(r4[5 * 12 + 0], std::cos(1.0), tol);
  EXPECT_NEAR(r4[5 * 12 + 1], std::sin(1.0), tol);
  EXPECT_NEAR(r4[5 * 12 + 2], -std::sin(2.0), tol);
  EXPECT_NEAR(r4[5 * 12 + 3], std::cos(2.0), tol);
  // D = 8, pairs (j, j+2): y-half t1 = 1 is the j = 1 pair's first element: θ = 1·0.1 → (t1, t3) = (cos .1, sin .1).
  // x-half t7 = 1 is the j = 1 pair's second element: θ = 2·0.1 → (t5, t7) = (−sin .2, cos .2).
  const float* o8 = &r8[5 * 12 + 4];
  EXPECT_NEAR(o8[0], 0.0, tol);
  EXPECT_NEAR(o8[1], std::cos(0.1), tol);
  EXPECT_NEAR(o8[2], 0.0, tol);
  EXPECT_NEAR(o8[3], std::sin(0.1), tol);
  EXPECT_NEAR(o8[4], 0.0, tol);
  EXPECT_NEAR(o8[5], -std::sin(0.2), tol);
  EXPECT_NEAR(o8[6], 0.0, tol);
  EXPECT_NEAR(o8[7], std::cos(0.2), tol);
  // Token 0 sits at (0, 0): nothing moves.
  EXPECT_EQ(r4[0], 0.0f);
  EXPECT_EQ(r4[3], 0.0f);
}

TEST_P(Rope2dTest, MatchesFloat64FormulaOnRandomHeadsAndLeavesOtherColumnsAlone) {
  const DType d = GetParam();
  struct Case {
    int64_t batch, gh, gw, cols, col_offset, heads, hd;
  };
  uint32_t seed = 900;
  for (const Case& c : {Case{2, 3, 5, 40, 4, 2, 16},   // heads inside a wider row
                        Case{1, 4, 6, 192, 0, 2, 32},  // packed qkv with H = 1, D = 32: q and k, not v
                        Case{2, 1, 40, 24, 0, 3, 8},   // x up to 39: large angles
                        Case{1, 33, 2, 64, 0, 1, 64},  // y up to 32
                        Case{3, 2, 3, 12, 8, 1, 4}}) {
    const int64_t tokens = c.gh * c.gw, n = c.batch * tokens * c.cols;
    Tensor x = upload_f32(rt(), d, {c.batch, tokens, c.cols}, random_floats(n, ++seed));
    const std::vector<float> stored = download_f32(rt(), x);
    Graph g(rt());
    ASSERT_TRUE(ops::rope2d(g, x, c.col_offset, c.heads, c.hd, {c.gh, c.gw}).is_ok());
    ASSERT_TRUE(g.run().is_ok());
    std::vector<double> want(stored.begin(), stored.end());
    rope_reference(want, c.batch, tokens, c.cols, c.col_offset, c.heads, c.hd, c.gw);
    const auto got = download_f32(rt(), x);
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t col = i % c.cols;
      if (col < c.col_offset || col >= c.col_offset + c.heads * c.hd) {
        ASSERT_EQ(got[i], stored[i]) << "column " << col << " outside the heads changed";
      } else {
        worst = std::max(worst, std::abs(got[i] - want[i]));
      }
    }
    // |t| ≤ 1: fp32 carries ω and θ in fp32 (θ error ~ p·1e-7); fp16 adds one rounding of the result.
    EXPECT_LE(worst, d == DType::kF32 ? 1e-5 : 1e-3) << c.gh << "x" << c.gw << " D=" << c.hd;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Rope2dTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class Rope2dMisuseTest : public GpuTest {};

TEST_F(Rope2dMisuseTest, RefusesBadGridsHeadDimsColumnsAndDtypes) {
  Tensor x = Tensor::empty(rt(), DType::kF32, {2, 6, 32}).value();
  Tensor flat = Tensor::empty(rt(), DType::kF32, {12, 32}).value();
  Tensor xi = Tensor::empty(rt(), DType::kI32, {2, 6, 32}).value();
  Graph g(rt());
  EXPECT_EQ(ops::rope2d(g, x, 0, 2, 16, {2, 2}).code(), StatusCode::kInvalidArgument);  // 4 != 6 tokens
  EXPECT_EQ(ops::rope2d(g, x, 0, 2, 6, {2, 3}).code(), StatusCode::kInvalidArgument);   // D % 4
  EXPECT_EQ(ops::rope2d(g, x, 8, 2, 16, {2, 3}).code(), StatusCode::kInvalidArgument);  // past column 32
  EXPECT_EQ(ops::rope2d(g, x, -4, 1, 16, {2, 3}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::rope2d(g, flat, 0, 2, 16, {2, 3}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::rope2d(g, xi, 0, 2, 16, {2, 3}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::rope2d(g, x, 0, 2, 16, {2, 3}, 0.5f).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
