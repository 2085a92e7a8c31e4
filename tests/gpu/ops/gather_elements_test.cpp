// GatherElements against a loop transcription of the ONNX reference (np.take_along_axis with
// negative indices wrapped): every axis of a 4-D tensor with indices smaller than the data off the
// axis, longer than the data along it, negative, f32/f16/i32; refusals. Gather against np.take:
// every axis, indices of rank 0, 1 and 2, negative, f32/f16/i32; refusals. GatherND against a loop
// transcription of the ONNX reference: tuples of every length, batch_dims 0 to 2, negative
// indices, f32/f16/i32; refusals.
#include "gpu/ops/gather_elements.h"

#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

// out[c] = data[c with c[axis] = idx[c] (wrapped)], row-major.
template <typename T>
std::vector<T> reference(const std::vector<T>& data, const Shape& s, const std::vector<int32_t>& idx, const Shape& is,
                         int axis) {
  std::vector<T> out(idx.size());
  for (size_t e = 0; e < idx.size(); ++e) {
    int64_t rem = static_cast<int64_t>(e), src = 0, stride = 1;
    for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
      int64_t c = rem % is[d];
      rem /= is[d];
      if (d == axis) c = idx[e] < 0 ? idx[e] + s[d] : idx[e];
      src += c * stride;
      stride *= s[d];
    }
    out[e] = data[static_cast<size_t>(src)];
  }
  return out;
}

// np.take(data, idx, axis) with negative indices wrapped: out[o, j, i] = data[o, idx[j], i].
template <typename T>
std::vector<T> take_reference(const std::vector<T>& data, const Shape& s, const std::vector<int32_t>& idx, int axis) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t len = s[axis];
  std::vector<T> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (const int32_t k : idx) {
      const int64_t row = k < 0 ? k + len : k;
      for (int64_t i = 0; i < inner; ++i) out.push_back(data[static_cast<size_t>((o * len + row) * inner + i)]);
    }
  }
  return out;
}

std::vector<int32_t> random_indices(int64_t n, int64_t len, uint32_t seed) {
  const auto r = random_floats(n, seed, 0.0f, 1.0f);
  std::vector<int32_t> idx(static_cast<size_t>(n));
  for (size_t i = 0; i < idx.size(); ++i) {
    idx[i] = static_cast<int32_t>(r[i] * 2 * static_cast<float>(len)) - static_cast<int32_t>(len);  // [−len, len)
    idx[i] = std::clamp<int32_t>(idx[i], -static_cast<int32_t>(len), static_cast<int32_t>(len) - 1);
  }
  return idx;
}

// ONNX GatherND: out[b, t, :] = data[b, indices[b, t, 0], ..., indices[b, t, k − 1], :] (wrapped).
template <typename T>
std::vector<T> gather_nd_reference(const std::vector<T>& data, const Shape& s, const std::vector<int32_t>& idx,
                                   const Shape& is, int64_t b) {
  const int64_t k = is.back();
  int64_t batch = 1, slots = 1, inner = 1;
  for (int64_t d = 0; d < b; ++d) batch *= s[static_cast<size_t>(d)];
  for (int64_t d = b; d < b + k; ++d) slots *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(b + k); d < s.size(); ++d) inner *= s[d];
  const int64_t rows = static_cast<int64_t>(idx.size()) / k, per_batch = rows / batch;
  std::vector<T> out;
  for (int64_t row = 0; row < rows; ++row) {
    int64_t slot = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t dim = s[static_cast<size_t>(b + j)], v = idx[static_cast<size_t>(row * k + j)];
      slot = slot * dim + (v < 0 ? v + dim : v);
    }
    for (int64_t i = 0; i < inner; ++i) {
      out.push_back(data[static_cast<size_t>(((row / per_batch) * slots + slot) * inner + i)]);
    }
  }
  return out;
}

class GatherElementsTest : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(GatherElementsTest, EveryAxisMatchesTheReference) {
  const DType d = GetParam();
  const Shape s{3, 4, 5, 6};
  const auto x = random_floats(shape_numel(s), 3, -4.0f, 4.0f);
  Tensor data = upload_f32(rt(), d, s, x);
  const auto stored = download_f32(rt(), data);
  uint32_t seed = 10;
  for (int axis = 0; axis < 4; ++axis) {
    Shape is = {2, 3, 4, 5};  // smaller off the axis
    is[axis] = 9;             // longer than the data along it
    const auto idx = random_indices(shape_numel(is), s[axis], ++seed);
    Tensor indices = Tensor::from_host(rt(), DType::kI32, is, idx.data(), idx.size() * 4).value();
    Tensor out = poisoned(rt(), d, is);
    Graph g(rt());
    const Status st = ops::gather_elements(g, data, indices, out, axis - 4);  // negative axes
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_TRUE(g.run().is_ok());
    EXPECT_EQ(download_f32(rt(), out), reference(stored, s, idx, is, axis)) << "axis " << axis;
  }
}

TEST_P(GatherElementsTest, GatherTakesAlongEveryAxisWithIndicesOfAnyRank) {
  const DType d = GetParam();
  const Shape s{3, 4, 5};
  Tensor data = upload_f32(rt(), d, s, random_floats(shape_numel(s), 4, -4.0f, 4.0f));
  const auto stored = download_f32(rt(), data);
  uint32_t seed = 30;
  for (int axis = 0; axis < 3; ++axis) {
    for (const Shape& is : {Shape{}, Shape{7}, Shape{2, 3}}) {
      const auto idx = random_indices(shape_numel(is), s[axis], ++seed);
      Tensor indices = Tensor::from_host(rt(), DType::kI32, is, idx.data(), idx.size() * 4).value();
      Shape os(s.begin(), s.begin() + axis);
      os.insert(os.end(), is.begin(), is.end());
      os.insert(os.end(), s.begin() + axis + 1, s.end());
      Tensor out = poisoned(rt(), d, os);
      Graph g(rt());
      const Status st = ops::gather(g, data, indices, out, axis - 3);  // negative axes
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      ASSERT_TRUE(g.run().is_ok());
      EXPECT_EQ(download_f32(rt(), out), take_reference(stored, s, idx, axis))
          << "axis " << axis << ", indices " << shape_string(is);
    }
  }
}

TEST_P(GatherElementsTest, GatherNdOfEveryTupleLengthAndBatchDimsMatchesTheReference) {
  const DType d = GetParam();
  const Shape s{2, 3, 4, 5};
  Tensor data = upload_f32(rt(), d, s, random_floats(shape_numel(s), 6, -4.0f, 4.0f));
  const auto stored = download_f32(rt(), data);
  uint32_t seed = 50;
  for (int64_t b = 0; b <= 2; ++b) {
    for (int64_t k = 1; b + k <= 4; ++k) {
      Shape is(s.begin(), s.begin() + b);
      is.push_back(3);  // three tuples per batch
      is.push_back(k);
      std::vector<int32_t> idx;
      for (int64_t t = 0; t < shape_numel(is) / k; ++t) {
        for (int64_t j = 0; j < k; ++j) idx.push_back(random_indices(1, s[static_cast<size_t>(b + j)], ++seed)[0]);
      }
      Shape os(is.begin(), is.end() - 1);
      os.insert(os.end(), s.begin() + b + k, s.end());
      Tensor indices = Tensor::from_host(rt(), DType::kI32, is, idx.data(), idx.size() * 4).value();
      Tensor out = poisoned(rt(), d, os);
      Graph g(rt());
      const Status st = ops::gather_nd(g, data, indices, out, static_cast<int>(b));
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      ASSERT_TRUE(g.run().is_ok());
      EXPECT_EQ(download_f32(rt(), out), gather_nd_reference(stored, s, idx, is, b))
          << "batch_dims " << b << ", k " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GatherElementsTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class GatherElementsMiscTest : public GpuTest {};

TEST_F(GatherElementsMiscTest, MovesI32WordsAndRefusesMismatchedOperands) {
  const std::vector<int32_t> x{10, 20, 30, 40, 50, 60};  // 2 × 3
  const std::vector<int32_t> idx{2, 0, -1, 1};           // 2 × 2 along axis 1
  Tensor data = Tensor::from_host(rt(), DType::kI32, {2, 3}, x.data(), x.size() * 4).value();
  Tensor indices = Tensor::from_host(rt(), DType::kI32, {2, 2}, idx.data(), idx.size() * 4).value();
  Tensor out = Tensor::empty(rt(), DType::kI32, {2, 2}).value();
  Graph g(rt());
  ASSERT_TRUE(ops::gather_elements(g, data, indices, out, 1).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  std::vector<int32_t> got(4);
  ASSERT_TRUE(out.download(rt(), got.data(), got.size() * 4).is_ok());
  EXPECT_EQ(got, (std::vector<int32_t>{30, 10, 60, 50}));

  Graph bad(rt());
  Tensor f_idx = Tensor::empty(rt(), DType::kF32, {2, 2}).value();
  EXPECT_EQ(ops::gather_elements(bad, data, f_idx, out, 1).code(), StatusCode::kInvalidArgument);  // float indices
  Tensor wide = Tensor::empty(rt(), DType::kI32, {3, 2}).value();
  Tensor wide_out = Tensor::empty(rt(), DType::kI32, {3, 2}).value();
  EXPECT_EQ(ops::gather_elements(bad, data, wide, wide_out, 1).code(), StatusCode::kInvalidArgument);  // off-axis
  EXPECT_EQ(ops::gather_elements(bad, data, indices, out, 2).code(), StatusCode::kInvalidArgument);    // axis
}

// Gather moves i32 words (an embedding table of integers) and refuses an out of the wrong shape,
// float indices and an axis past the data's rank.
TEST_F(GatherElementsMiscTest, GatherMovesI32WordsAndRefusesMismatchedOperands) {
  const std::vector<int32_t> x{10, 20, 30, 40, 50, 60};  // 3 × 2
  const std::vector<int32_t> idx{2, -3, 1, 2};           // 2 × 2 rows
  Tensor data = Tensor::from_host(rt(), DType::kI32, {3, 2}, x.data(), x.size() * 4).value();
  Tensor indices = Tensor::from_host(rt(), DType::kI32, {2, 2}, idx.data(), idx.size() * 4).value();
  Tensor out = Tensor::empty(rt(), DType::kI32, {2, 2, 2}).value();
  Graph g(rt());
  ASSERT_TRUE(ops::gather(g, data, indices, out, 0).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  std::vector<int32_t> got(8);
  ASSERT_TRUE(out.download(rt(), got.data(), got.size() * 4).is_ok());
  EXPECT_EQ(got, (std::vector<int32_t>{50, 60, 10, 20, 30, 40, 50, 60}));

  Graph bad(rt());
  Tensor flat_out = Tensor::empty(rt(), DType::kI32, {4, 2}).value();
  EXPECT_EQ(ops::gather(bad, data, indices, flat_out, 0).code(), StatusCode::kInvalidArgument);  // out's shape
  Tensor f_idx = Tensor::empty(rt(), DType::kF32, {2, 2}).value();
  EXPECT_EQ(ops::gather(bad, data, f_idx, out, 0).code(), StatusCode::kInvalidArgument);    // float indices
  EXPECT_EQ(ops::gather(bad, data, indices, out, 2).code(), StatusCode::kInvalidArgument);  // axis
  EXPECT_EQ(bad.dispatch_count(), 0u);
}

// GatherND moves i32 words (ONNX's gathernd_example_int32) and refuses tuples longer than the data's
// rank, batch axes that differ and an out of the wrong shape.
TEST_F(GatherElementsMiscTest, GatherNdMovesI32WordsAndRefusesMismatchedOperands) {
  const std::vector<int32_t> x{0, 1, 2, 3};  // 2 × 2
  const std::vector<int32_t> idx{0, 0, 1, 1};
  Tensor data = Tensor::from_host(rt(), DType::kI32, {2, 2}, x.data(), x.size() * 4).value();
  Tensor indices = Tensor::from_host(rt(), DType::kI32, {2, 2}, idx.data(), idx.size() * 4).value();
  Tensor out = Tensor::empty(rt(), DType::kI32, {2}).value();
  Graph g(rt());
  ASSERT_TRUE(ops::gather_nd(g, data, indices, out, 0).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  std::vector<int32_t> got(2);
  ASSERT_TRUE(out.download(rt(), got.data(), got.size() * 4).is_ok());
  EXPECT_EQ(got, (std::vector<int32_t>{0, 3}));

  Graph bad(rt());
  Tensor long_idx = Tensor::empty(rt(), DType::kI32, {2, 3}).value();
  EXPECT_EQ(ops::gather_nd(bad, data, long_idx, out, 0).code(), StatusCode::kInvalidArgument);  // k = 3 > rank
  Tensor batch_idx = Tensor::empty(rt(), DType::kI32, {3, 1}).value();
  EXPECT_EQ(ops::gather_nd(bad, data, batch_idx, out, 1).code(), StatusCode::kInvalidArgument);  // batch 3 ≠ 2
  Tensor wrong_out = Tensor::empty(rt(), DType::kI32, {2, 2}).value();
  EXPECT_EQ(ops::gather_nd(bad, data, indices, wrong_out, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.dispatch_count(), 0u);
}

// Rank 8: the axes past the gathered one, spanned whole by the indices, merge into one.
TEST_F(GatherElementsMiscTest, HighRanksWhoseTrailingAxesTheIndicesSpanMerge) {
  const Shape s{2, 3, 2, 2, 2, 2, 2, 3}, is{2, 1, 2, 2, 2, 2, 2, 3};
  const auto x = random_floats(shape_numel(s), 5, -1.0f, 1.0f);
  const auto idx = random_indices(shape_numel(is), 3, 6);
  Tensor data = upload_f32(rt(), DType::kF32, s, x);
  Tensor indices = Tensor::from_host(rt(), DType::kI32, is, idx.data(), idx.size() * 4).value();
  Tensor out = poisoned(rt(), DType::kF32, is);
  Graph g(rt());
  const Status st = ops::gather_elements(g, data, indices, out, 1);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_TRUE(g.run().is_ok());
  EXPECT_EQ(download_f32(rt(), out), reference(download_f32(rt(), data), s, idx, is, 1));
  const Shape no_merge{2, 1, 1, 1, 1, 1, 1, 2};  // no axis spans the data: 8 axes stay
  Tensor short_idx = Tensor::empty(rt(), DType::kI32, no_merge).value();
  Tensor short_out = Tensor::empty(rt(), DType::kF32, no_merge).value();
  Graph bad(rt());
  EXPECT_EQ(ops::gather_elements(bad, data, short_idx, short_out, 1).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace recon::gpu
