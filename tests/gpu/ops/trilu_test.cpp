// Trilu against a loop transcription of NumPy's np.triu / np.tril (the ONNX reference): every
// diagonal offset from beyond the left edge to beyond the right, upper and lower, square, wide and
// tall matrices in a batch, f32/f16/i32, and inf and NaN kept where the triangle keeps them.
#include "gpu/ops/trilu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

// np.triu(x, k) / np.tril(x, k) over the last two axes of `s`.
template <typename T>
std::vector<T> reference(const std::vector<T>& x, const Shape& s, int64_t k, bool upper) {
  const int64_t rows = s[s.size() - 2], cols = s.back();
  std::vector<T> out(x.size(), T(0));
  for (size_t e = 0; e < x.size(); ++e) {
    const int64_t j = static_cast<int64_t>(e) % cols, i = (static_cast<int64_t>(e) / cols) % rows;
    if (upper ? j - i >= k : j - i <= k) out[e] = x[e];
  }
  return out;
}

class TriluTest : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(TriluTest, EveryOffsetOfSquareWideAndTallMatricesMatchesNumPy) {
  const DType d = GetParam();
  for (const Shape& s : {Shape{4, 4}, Shape{2, 3, 3, 7}, Shape{5, 7, 2}, Shape{1, 1}}) {
    const auto x = random_floats(shape_numel(s), 7, -4.0f, 4.0f);
    Tensor in = upload_f32(rt(), d, s, x);
    const auto stored = download_f32(rt(), in);
    for (bool upper : {true, false}) {
      for (int64_t k = -9; k <= 9; ++k) {
        Tensor out = poisoned(rt(), d, s);
        Graph g(rt());
        ASSERT_TRUE(ops::trilu(g, in, out, k, upper).is_ok());
        ASSERT_TRUE(g.run().is_ok());
        EXPECT_EQ(download_f32(rt(), out), reference(stored, s, k, upper))
            << shape_string(s) << (upper ? " upper" : " lower") << " k = " << k;
      }
    }
  }
}

TEST_P(TriluTest, InfAndNanAreKeptOrZeroedLikeAnyValue) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x{inf, nan, -inf, nan, inf, -inf, nan, nan, inf};  // 3 × 3
  Tensor in = upload_f32(rt(), GetParam(), {3, 3}, x);
  Tensor out = poisoned(rt(), GetParam(), {3, 3});
  Graph g(rt());
  ASSERT_TRUE(ops::trilu(g, in, out, 0, /*upper=*/true).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  const auto got = download_f32(rt(), out);
  for (size_t e = 0; e < x.size(); ++e) {
    const bool kept = e % 3 >= e / 3;
    if (!kept) {
      EXPECT_EQ(got[e], 0.0f) << e;
    } else if (std::isnan(x[e])) {
      EXPECT_TRUE(std::isnan(got[e])) << e;
    } else {
      EXPECT_EQ(got[e], x[e]) << e;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, TriluTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class TriluMiscTest : public GpuTest {};

TEST_F(TriluMiscTest, MovesI32WordsAndRefusesMismatchedOperands) {
  const std::vector<int32_t> x{1, -2, 3, 4, 5, -6};  // 2 × 3
  Tensor in = Tensor::from_host(rt(), DType::kI32, {2, 3}, x.data(), x.size() * 4).value();
  Tensor out = Tensor::empty(rt(), DType::kI32, {2, 3}).value();
  Graph g(rt());
  ASSERT_TRUE(ops::trilu(g, in, out, 1, /*upper=*/false).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  std::vector<int32_t> got(6);
  ASSERT_TRUE(out.download(rt(), got.data(), got.size() * 4).is_ok());
  EXPECT_EQ(got, reference(x, {2, 3}, 1, false));

  Graph bad(rt());
  Tensor vec = Tensor::empty(rt(), DType::kF32, {6}).value();
  EXPECT_EQ(ops::trilu(bad, vec, vec, 0, true).code(), StatusCode::kInvalidArgument);
  Tensor other = Tensor::empty(rt(), DType::kF32, {2, 3}).value();
  EXPECT_EQ(ops::trilu(bad, in, other, 0, true).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace recon::gpu
