// CumSum against an in-order loop (np.cumsum, with ONNX's exclusive and reverse): every axis of a
// 3-D tensor in every mode, f32 (exact: the same additions in the same order), f16 (the fp32 sum
// rounded once per output) and i32; refusals.
#include "gpu/ops/cumsum.h"

#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

template <typename T>
std::vector<T> reference(const std::vector<T>& x, const Shape& s, int axis, bool exclusive, bool reverse) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t len = s[static_cast<size_t>(axis)];
  std::vector<T> out(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      T sum = 0;
      for (int64_t j = 0; j < len; ++j) {
        const size_t at = static_cast<size_t>((o * len + (reverse ? len - 1 - j : j)) * inner + i);
        if (exclusive) {
          out[at] = sum;
          sum += x[at];
        } else {
          sum += x[at];
          out[at] = sum;
        }
      }
    }
  }
  return out;
}

class CumSumTest : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(CumSumTest, EveryAxisAndModeMatchesTheReference) {
  const DType d = GetParam();
  const Shape s{3, 4, 5};
  Tensor x = upload_f32(rt(), d, s, random_floats(shape_numel(s), 7, -2.0f, 2.0f));
  const auto stored = download_f32(rt(), x);
  for (int axis = 0; axis < 3; ++axis) {
    for (int mode = 0; mode < 4; ++mode) {
      const bool exclusive = (mode & 1) != 0, reverse = (mode & 2) != 0;
      Tensor out = poisoned(rt(), d, s);
      Graph g(rt());
      const Status st = ops::cumsum(g, x, out, axis - 3, exclusive, reverse);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      ASSERT_TRUE(g.run().is_ok());
      std::vector<float> want = reference(stored, s, axis, exclusive, reverse);
      if (d == DType::kF16) want = from_f16(to_f16(want));
      EXPECT_EQ(download_f32(rt(), out), want)
          << "axis " << axis << ", exclusive " << exclusive << ", reverse " << reverse;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CumSumTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class CumSumMiscTest : public GpuTest {};

TEST_F(CumSumMiscTest, IntegersSumExactlyAndMismatchedOperandsAreRefused) {
  const std::vector<int32_t> v{1, -2, 3, 100000, 5, -6};  // 2 × 3
  Tensor x = Tensor::from_host(rt(), DType::kI32, {2, 3}, v.data(), v.size() * 4).value();
  Tensor out = Tensor::empty(rt(), DType::kI32, {2, 3}).value();
  Graph g(rt());
  ASSERT_TRUE(ops::cumsum(g, x, out, 1, /*exclusive=*/true, /*reverse=*/true).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  std::vector<int32_t> got(6);
  ASSERT_TRUE(out.download(rt(), got.data(), got.size() * 4).is_ok());
  EXPECT_EQ(got, reference(v, {2, 3}, 1, true, true));

  Graph bad(rt());
  Tensor f_out = Tensor::empty(rt(), DType::kF32, {2, 3}).value();
  EXPECT_EQ(ops::cumsum(bad, x, f_out, 1).code(), StatusCode::kInvalidArgument);  // dtypes differ
  Tensor short_out = Tensor::empty(rt(), DType::kI32, {2, 2}).value();
  EXPECT_EQ(ops::cumsum(bad, x, short_out, 1).code(), StatusCode::kInvalidArgument);  // shapes differ
  EXPECT_EQ(ops::cumsum(bad, x, out, 2).code(), StatusCode::kInvalidArgument);        // axis
  EXPECT_EQ(bad.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
