// ScatterElements and ScatterND against loop transcriptions of the ONNX reference (a copy of data,
// then each update applied in order): every axis of a 3-D tensor with duplicate and negative
// indices, updates smaller than the data off the axis, every reduction, f32/f16 (the reference's
// fp32 sums in the kernel's order, rounded to the storage dtype) and i32; many duplicates without a
// reduction (the two-pass path's atomic marks); refusals.
#include "gpu/ops/scatter.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT
using ops::ScatterReduction;

template <typename T>
T combine(T acc, T u, ScatterReduction r) {
  switch (r) {
    case ScatterReduction::kAdd:
      return acc + u;
    case ScatterReduction::kMul:
      return acc * u;
    case ScatterReduction::kMax:
      return std::max(acc, u);
    case ScatterReduction::kMin:
      return std::min(acc, u);
    case ScatterReduction::kNone:
      break;
  }
  return u;
}

// ONNX ScatterElements: for each update position u, out[u with u[axis] = idx[u]] ∘= updates[u].
template <typename T>
std::vector<T> elements_reference(std::vector<T> out, const Shape& s, const std::vector<int32_t>& idx,
                                  const std::vector<T>& upd, const Shape& is, int axis, ScatterReduction r) {
  for (size_t u = 0; u < idx.size(); ++u) {
    int64_t rem = static_cast<int64_t>(u), dst = 0, stride = 1;
    for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
      int64_t c = rem % is[d];
      rem /= is[d];
      if (d == axis) c = idx[u] < 0 ? idx[u] + s[d] : idx[u];
      dst += c * stride;
      stride *= s[d];
    }
    out[static_cast<size_t>(dst)] = combine(out[static_cast<size_t>(dst)], upd[u], r);
  }
  return out;
}

// ONNX ScatterND: for each tuple t of k indices, out[tuple, :] ∘= updates[t, :].
template <typename T>
std::vector<T> nd_reference(std::vector<T> out, const Shape& s, const std::vector<int32_t>& idx, int64_t k,
                            const std::vector<T>& upd, ScatterReduction r) {
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(k); d < s.size(); ++d) inner *= s[d];
  for (size_t t = 0; t < idx.size() / static_cast<size_t>(k); ++t) {
    int64_t slot = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t v = idx[t * static_cast<size_t>(k) + static_cast<size_t>(j)];
      slot = slot * s[static_cast<size_t>(j)] + (v < 0 ? v + s[static_cast<size_t>(j)] : v);
    }
    for (int64_t i = 0; i < inner; ++i) {
      T& o = out[static_cast<size_t>(slot * inner + i)];
      o = combine(o, upd[t * static_cast<size_t>(inner) + static_cast<size_t>(i)], r);
    }
  }
  return out;
}

// Indices in [−len, len) with many duplicates.
std::vector<int32_t> indices_of(int64_t n, int64_t len, uint32_t seed) {
  const auto r = random_floats(n, seed, 0.0f, 1.0f);
  std::vector<int32_t> idx(static_cast<size_t>(n));
  for (size_t i = 0; i < idx.size(); ++i) {
    idx[i] = std::clamp<int32_t>(static_cast<int32_t>(r[i] * 2 * static_cast<float>(len)) - static_cast<int32_t>(len),
                                 -static_cast<int32_t>(len), static_cast<int32_t>(len) - 1);
  }
  return idx;
}

std::vector<float> stored_as(DType d, std::vector<float> v) {
  return d == DType::kF16 ? from_f16(to_f16(v)) : v;
}

constexpr ScatterReduction kReductions[] = {ScatterReduction::kNone, ScatterReduction::kAdd, ScatterReduction::kMul,
                                            ScatterReduction::kMax, ScatterReduction::kMin};

class ScatterTest : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(ScatterTest, ElementsAlongEveryAxisWithEveryReductionMatchTheReference) {
  const DType d = GetParam();
  const Shape s{3, 4, 5};
  Tensor data = upload_f32(rt(), d, s, random_floats(shape_numel(s), 1, 0.5f, 2.0f));
  const auto x = download_f32(rt(), data);
  uint32_t seed = 20;
  for (int axis = 0; axis < 3; ++axis) {
    Shape is{2, 3, 4};  // smaller than the data off the axis
    is[axis] = 7;       // longer along it: duplicates
    const auto idx = indices_of(shape_numel(is), s[axis], ++seed);
    Tensor indices = Tensor::from_host(rt(), DType::kI32, is, idx.data(), idx.size() * 4).value();
    Tensor updates = upload_f32(rt(), d, is, random_floats(shape_numel(is), ++seed, 0.5f, 2.0f));
    const auto u = download_f32(rt(), updates);
    for (const ScatterReduction r : kReductions) {
      Tensor out = poisoned(rt(), d, s);
      Graph g(rt());
      const Status st = ops::scatter_elements(g, data, indices, updates, out, axis - 3, r);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      ASSERT_TRUE(g.run().is_ok());
      EXPECT_EQ(download_f32(rt(), out), stored_as(d, elements_reference(x, s, idx, u, is, axis, r)))
          << "axis " << axis << ", reduction " << static_cast<int>(r);
    }
  }
}

TEST_P(ScatterTest, NdOfEveryTupleLengthWithEveryReductionMatchesTheReference) {
  const DType d = GetParam();
  const Shape s{4, 3, 5};
  Tensor data = upload_f32(rt(), d, s, random_floats(shape_numel(s), 2, 0.5f, 2.0f));
  const auto x = download_f32(rt(), data);
  uint32_t seed = 40;
  for (int64_t k = 1; k <= 3; ++k) {
    const Shape is{2, 3, k};  // six tuples, duplicates likely
    std::vector<int32_t> idx;
    for (int64_t t = 0; t < 6; ++t) {
      for (int64_t j = 0; j < k; ++j) idx.push_back(indices_of(1, s[static_cast<size_t>(j)], ++seed)[0]);
    }
    Shape us{2, 3};
    us.insert(us.end(), s.begin() + k, s.end());
    Tensor indices = Tensor::from_host(rt(), DType::kI32, is, idx.data(), idx.size() * 4).value();
    Tensor updates = upload_f32(rt(), d, us, random_floats(shape_numel(us), ++seed, 0.5f, 2.0f));
    const auto u = download_f32(rt(), updates);
    for (const ScatterReduction r : kReductions) {
      Tensor out = poisoned(rt(), d, s);
      Graph g(rt());
      const Status st = ops::scatter_nd(g, data, indices, updates, out, r);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      ASSERT_TRUE(g.run().is_ok());
      EXPECT_EQ(download_f32(rt(), out), stored_as(d, nd_reference(x, s, idx, k, u, r)))
          << "k " << k << ", reduction " << static_cast<int>(r);
    }
  }
}

// Without a reduction each destination's last update is marked by an atomic max over update
// positions, run by thousands of invocations at once: many duplicates still keep the last one.
TEST_P(ScatterTest, ManyDuplicatesWithoutAReductionKeepTheLastUpdate) {
  const DType d = GetParam();
  const Shape s{2, 5}, is{2, 600};
  Tensor data = upload_f32(rt(), d, s, random_floats(shape_numel(s), 3, -1.0f, 1.0f));
  const auto idx = indices_of(shape_numel(is), 5, 7);
  Tensor indices = Tensor::from_host(rt(), DType::kI32, is, idx.data(), idx.size() * 4).value();
  Tensor updates = upload_f32(rt(), d, is, random_floats(shape_numel(is), 8, -1.0f, 1.0f));
  const auto x = download_f32(rt(), data), u = download_f32(rt(), updates);
  Tensor out = poisoned(rt(), d, s);
  Graph g(rt());
  ASSERT_TRUE(ops::scatter_elements(g, data, indices, updates, out, 1).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  EXPECT_EQ(download_f32(rt(), out), elements_reference(x, s, idx, u, is, 1, ScatterReduction::kNone));
  // ScatterND: 1,200 rows into 5 slots of [5, 2].
  const Shape nd_s{5, 2};
  std::vector<int32_t> nd_idx = indices_of(1200, 5, 9);
  Tensor nd_indices = Tensor::from_host(rt(), DType::kI32, {1200, 1}, nd_idx.data(), nd_idx.size() * 4).value();
  Tensor nd_updates = upload_f32(rt(), d, {1200, 2}, random_floats(2400, 10, -1.0f, 1.0f));
  Tensor nd_data = upload_f32(rt(), d, nd_s, random_floats(10, 11, -1.0f, 1.0f));
  Tensor nd_out = poisoned(rt(), d, nd_s);
  Graph nd(rt());
  ASSERT_TRUE(ops::scatter_nd(nd, nd_data, nd_indices, nd_updates, nd_out).is_ok());
  ASSERT_TRUE(nd.run().is_ok());
  EXPECT_EQ(download_f32(rt(), nd_out), nd_reference(download_f32(rt(), nd_data), nd_s, nd_idx, 1,
                                                     download_f32(rt(), nd_updates), ScatterReduction::kNone));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ScatterTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class ScatterMiscTest : public GpuTest {};

TEST_F(ScatterMiscTest, IntegersReduceInIntegerArithmeticAndMismatchedOperandsAreRefused) {
  const std::vector<int32_t> x{1, 2, 3, 4, 5, 6};  // 2 × 3
  const std::vector<int32_t> idx{2, -3, 2, 0};     // 2 × 2 along axis 1: row 0 hits column 2 twice
  const std::vector<int32_t> upd{10, 20, 30, 40};
  Tensor data = Tensor::from_host(rt(), DType::kI32, {2, 3}, x.data(), x.size() * 4).value();
  Tensor indices = Tensor::from_host(rt(), DType::kI32, {2, 2}, idx.data(), idx.size() * 4).value();
  Tensor updates = Tensor::from_host(rt(), DType::kI32, {2, 2}, upd.data(), upd.size() * 4).value();
  Tensor out = Tensor::empty(rt(), DType::kI32, {2, 3}).value();
  for (const ScatterReduction r : kReductions) {
    Graph g(rt());
    ASSERT_TRUE(ops::scatter_elements(g, data, indices, updates, out, 1, r).is_ok());
    ASSERT_TRUE(g.run().is_ok());
    std::vector<int32_t> got(6);
    ASSERT_TRUE(out.download(rt(), got.data(), got.size() * 4).is_ok());
    EXPECT_EQ(got, elements_reference(x, {2, 3}, idx, upd, {2, 2}, 1, r)) << static_cast<int>(r);
  }

  Graph bad(rt());
  Tensor f_idx = Tensor::empty(rt(), DType::kF32, {2, 2}).value();
  EXPECT_EQ(ops::scatter_elements(bad, data, f_idx, updates, out, 1).code(), StatusCode::kInvalidArgument);
  Tensor f_upd = Tensor::empty(rt(), DType::kF32, {2, 2}).value();
  EXPECT_EQ(ops::scatter_elements(bad, data, indices, f_upd, out, 1).code(), StatusCode::kInvalidArgument);
  Tensor wide = Tensor::empty(rt(), DType::kI32, {3, 2}).value();
  EXPECT_EQ(ops::scatter_elements(bad, data, wide, wide, out, 1).code(), StatusCode::kInvalidArgument);  // off-axis
  EXPECT_EQ(ops::scatter_elements(bad, data, indices, updates, out, 2).code(), StatusCode::kInvalidArgument);
  Tensor nd_idx = Tensor::empty(rt(), DType::kI32, {2, 3}).value();  // k = 3 > rank 2
  EXPECT_EQ(ops::scatter_nd(bad, data, nd_idx, updates, out).code(), StatusCode::kInvalidArgument);
  Tensor row_idx = Tensor::empty(rt(), DType::kI32, {2, 1}).value();  // updates must be [2, 3]
  EXPECT_EQ(ops::scatter_nd(bad, data, row_idx, updates, out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
