// Top-k along the last axis against a stable CPU sort: k from 1 to 128, rows shorter and longer
// than the workgroup, many ties, largest and smallest, splitting beyond one binding, misuse.
#include "gpu/ops/topk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "gpu/ops/layout.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

std::vector<int32_t> download_i32(Runtime& rt, const Tensor& t) {
  std::vector<int32_t> v(t.numel());
  EXPECT_TRUE(t.download(rt, v.data(), v.size() * 4).is_ok());
  return v;
}

class TopkTest : public GpuTest, public ::testing::WithParamInterface<DType> {
 protected:
  // Runs top-k on fresh data and compares with a stable sort of the stored values.
  void check(const Shape& shape, int64_t k, bool largest, bool ties, uint32_t seed) {
    const DType d = GetParam();
    auto x = random_floats(shape_numel(shape), seed, -3.0f, 3.0f);
    if (ties) {
      for (float& v : x) v = std::round(v * 2.0f) / 2.0f;  // 13 levels
    }
    Tensor in = upload_f32(rt(), d, shape, x);
    Shape out_shape = shape;
    out_shape.back() = k;
    Tensor values = poisoned(rt(), d, out_shape);
    Tensor indices = Tensor::empty(rt(), DType::kI32, out_shape).value();
    std::vector<int32_t> poison(indices.numel(), -7);
    ASSERT_TRUE(indices.upload(rt(), poison.data(), poison.size() * 4).is_ok());
    Graph g(rt());
    Status s = ops::topk(g, in, values, indices, k, largest);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_TRUE(g.run().is_ok());
    auto stored = download_f32(rt(), in);
    auto got_v = download_f32(rt(), values);
    auto got_i = download_i32(rt(), indices);
    const int64_t n = shape.back(), rows = shape_numel(shape) / n;
    std::vector<int32_t> order(n);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = stored.data() + r * n;
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t a, int32_t b) { return largest ? row[a] > row[b] : row[a] < row[b]; });
      for (int64_t j = 0; j < k; ++j) {
        ASSERT_EQ(got_i[r * k + j], order[j]) << "row " << r << " rank " << j << " of " << shape_string(shape)
                                              << " k=" << k << (largest ? " largest" : " smallest");
        ASSERT_EQ(got_v[r * k + j], row[order[j]]) << "row " << r << " rank " << j;
      }
    }
  }
};

TEST_P(TopkTest, MatchesAStableSortForManyK) {
  uint32_t seed = 1;
  for (int64_t k : {1, 7, 64, 128}) check({5, 1000}, k, true, false, ++seed);
  check({2, 3, 257}, 5, true, false, ++seed);
}

TEST_P(TopkTest, TiesRankByTheLowerIndex) {
  check({6, 333}, 40, true, true, 10);
  check({6, 333}, 9, false, true, 11);
}

TEST_P(TopkTest, SmallestAndShortRows) {
  check({4, 10}, 3, false, false, 20);  // n below the workgroup size
  check({3, 17}, 17, true, true, 21);   // k == n
  check({1, 1}, 1, true, false, 22);
  check({7, 129}, 33, false, false, 23);  // ragged
}

INSTANTIATE_TEST_SUITE_P(Dtypes, TopkTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class TopkMiscTest : public TopkTest {};

TEST_P(TopkMiscTest, RowsAreSplitBeyondOneBinding) {
  struct Limit {
    Limit() { ops::set_max_binding_bytes_for_testing(2048); }
    ~Limit() { ops::set_max_binding_bytes_for_testing(0); }
  } limit;
  check({19, 150}, 10, true, true, 30);  // a row is 600 bytes (f32) or 300 (f16), so several dispatches
}

INSTANTIATE_TEST_SUITE_P(Dtypes, TopkMiscTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class TopkMisuseTest : public GpuTest {};

TEST_F(TopkMisuseTest, BadKShapesAndDtypesAreRefused) {
  auto t = [&](DType d, const Shape& s) { return Tensor::empty(rt(), d, s).value(); };
  Graph g(rt());
  const Tensor in = t(DType::kF32, {4, 200});
  EXPECT_EQ(ops::topk(g, in, t(DType::kF32, {4, 0}), t(DType::kI32, {4, 0}), 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::topk(g, t(DType::kF32, {4, 5}), t(DType::kF32, {4, 6}), t(DType::kI32, {4, 6}), 6).code(),
            StatusCode::kInvalidArgument);  // k > n
  EXPECT_EQ(ops::topk(g, in, t(DType::kF32, {4, 129}), t(DType::kI32, {4, 129}), 129).code(),
            StatusCode::kInvalidArgument);  // k > kMaxTopK
  EXPECT_EQ(ops::topk(g, in, t(DType::kF32, {4, 3}), t(DType::kI32, {4, 4}), 4).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::topk(g, in, t(DType::kF32, {2, 4}), t(DType::kI32, {2, 4}), 4).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::topk(g, in, t(DType::kF16, {4, 4}), t(DType::kI32, {4, 4}), 4).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::topk(g, in, t(DType::kF32, {4, 4}), t(DType::kF32, {4, 4}), 4).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::topk(g, t(DType::kI32, {4, 5}), t(DType::kI32, {4, 2}), t(DType::kI32, {4, 2}), 2).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::topk(g, t(DType::kF32, {}), t(DType::kF32, {}), t(DType::kI32, {}), 1).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
