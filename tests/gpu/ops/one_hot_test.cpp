// One-hot rows against a loop transcription of the ONNX OneHot reference: every axis of a 3-D
// output, negative indices counted from the end, out-of-range ones giving a row of `off`, custom on
// and off values, f32 and f16; refusals.
#include "gpu/ops/one_hot.h"

#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

std::vector<float> reference(const std::vector<int32_t>& idx, const Shape& out, int axis, float on, float off) {
  const int64_t depth = out[static_cast<size_t>(axis)];
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < out.size(); ++d) inner *= out[d];
  std::vector<float> y(static_cast<size_t>(shape_numel(out)));
  for (size_t e = 0; e < y.size(); ++e) {
    const int64_t r = static_cast<int64_t>(e) % inner, j = static_cast<int64_t>(e) / inner % depth,
                  o = static_cast<int64_t>(e) / (inner * depth);
    int64_t k = idx[static_cast<size_t>(o * inner + r)];
    if (k < 0) k += depth;
    y[e] = k == j ? on : off;
  }
  return y;
}

class OneHotTest : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(OneHotTest, EveryAxisNegativeAndOutOfRangeIndicesMatchTheReference) {
  const Shape out_shape{3, 5, 4};
  for (int axis = 0; axis < 3; ++axis) {
    const int64_t depth = out_shape[static_cast<size_t>(axis)];
    std::vector<int32_t> idx(static_cast<size_t>(shape_numel(out_shape) / depth));
    for (size_t i = 0; i < idx.size(); ++i)
      idx[i] = static_cast<int32_t>(i * 7 % (2 * depth + 3)) - static_cast<int32_t>(depth + 1);
    Tensor indices =
        Tensor::from_host(rt(), DType::kI32, {static_cast<int64_t>(idx.size())}, idx.data(), idx.size() * 4).value();
    Tensor out = poisoned(rt(), GetParam(), out_shape);
    Graph g(rt());
    const Status s = ops::one_hot(g, indices, out, axis - 3, 3.0f, -0.5f);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_TRUE(g.run().is_ok());
    EXPECT_EQ(download_f32(rt(), out), reference(idx, out_shape, axis, 3.0f, -0.5f)) << "axis " << axis;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, OneHotTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class OneHotMiscTest : public GpuTest {};

TEST_F(OneHotMiscTest, RefusesMismatchedOperands) {
  Tensor idx = Tensor::empty(rt(), DType::kI32, {6}).value();
  Tensor f_idx = Tensor::empty(rt(), DType::kF32, {6}).value();
  Tensor out = Tensor::empty(rt(), DType::kF32, {6, 4}).value();
  Tensor i_out = Tensor::empty(rt(), DType::kI32, {6, 4}).value();
  Graph g(rt());
  EXPECT_EQ(ops::one_hot(g, f_idx, out, 1).code(), StatusCode::kInvalidArgument);  // float indices
  EXPECT_EQ(ops::one_hot(g, idx, i_out, 1).code(), StatusCode::kInvalidArgument);  // integer output
  EXPECT_EQ(ops::one_hot(g, idx, out, 0).code(), StatusCode::kInvalidArgument);    // 6 rows of 6 ≠ 24
  EXPECT_EQ(ops::one_hot(g, idx, out, 2).code(), StatusCode::kInvalidArgument);    // axis
  EXPECT_TRUE(ops::one_hot(g, idx, out, -1).is_ok());
}

}  // namespace
}  // namespace recon::gpu
