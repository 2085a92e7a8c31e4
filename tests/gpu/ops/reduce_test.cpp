// Reductions over every axis of a 4-D tensor (both schedules), keepdim shapes, argmax/argmin with
// ties and NaN, splitting beyond one binding, misuse.
#include "gpu/ops/reduce.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gpu/ops/layout.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT
using ops::ReduceOp;

struct View {
  int64_t outer, len, inner;
};
View view_of(const Shape& s, int axis) {
  View v{1, s[axis], 1};
  for (int d = 0; d < axis; ++d) v.outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) v.inner *= s[d];
  return v;
}
Shape without(Shape s, int axis) {
  s.erase(s.begin() + axis);
  return s;
}

std::vector<int32_t> download_i32(Runtime& rt, const Tensor& t) {
  std::vector<int32_t> v(t.numel());
  EXPECT_TRUE(t.download(rt, v.data(), v.size() * 4).is_ok());
  return v;
}

// Float64 reduction of stored values; `scale` receives Σ|x| (sum), Σ|x|/len (mean) or |result|.
void reference(ReduceOp op, const std::vector<float>& x, View v, std::vector<double>& want,
               std::vector<double>& scale) {
  want.assign(v.outer * v.inner, 0.0);
  scale.assign(v.outer * v.inner, 0.0);
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t r = 0; r < v.inner; ++r) {
      double acc = op == ReduceOp::kMax    ? -INFINITY
                   : op == ReduceOp::kMin  ? INFINITY
                   : op == ReduceOp::kProd ? 1.0
                                           : 0.0;
      double abs_sum = 0;
      for (int64_t j = 0; j < v.len; ++j) {
        const double e = x[(o * v.len + j) * v.inner + r];
        abs_sum += std::abs(e);
        acc = op == ReduceOp::kMax    ? std::max(acc, e)
              : op == ReduceOp::kMin  ? std::min(acc, e)
              : op == ReduceOp::kProd ? acc * e
                                      : acc + e;
      }
      if (op == ReduceOp::kMean) acc /= double(v.len), abs_sum /= double(v.len);
      want[o * v.inner + r] = acc;
      scale[o * v.inner + r] = (op == ReduceOp::kSum || op == ReduceOp::kMean) ? abs_sum : std::abs(acc);
    }
}

class ReduceTest : public GpuTest, public ::testing::WithParamInterface<DType> {
 protected:
  // Worst |got − want| / scale for one reduction.
  double run(ReduceOp op, const Shape& shape, int axis, bool keepdim, uint32_t seed, float lo = -1.0f,
             float hi = 1.0f) {
    const DType d = GetParam();
    auto x = random_floats(shape_numel(shape), seed, lo, hi);
    Tensor in = upload_f32(rt(), d, shape, x);
    const int a = axis < 0 ? axis + static_cast<int>(shape.size()) : axis;
    Shape out_shape = shape;
    if (keepdim)
      out_shape[a] = 1;
    else
      out_shape = without(shape, a);
    Tensor out = poisoned(rt(), d, out_shape);
    Graph g(rt());
    Status s = ops::reduce(g, op, in, out, axis);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_TRUE(g.run().is_ok());
    std::vector<double> want, scale;
    reference(op, download_f32(rt(), in), view_of(shape, a), want, scale);
    auto got = download_f32(rt(), out);
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (!std::isfinite(got[i])) return INFINITY;
      worst = std::max(worst, std::abs(got[i] - want[i]) / (scale[i] + 1e-30));
    }
    return worst;
  }
  double tol() const { return GetParam() == DType::kF32 ? 1e-6 : 1e-3; }
};

TEST_P(ReduceTest, EveryOpOverEveryAxisOfA4DTensor) {
  const Shape shape{3, 5, 7, 130};  // axis 3: a workgroup per row; axes 0–2: an invocation per output
  uint32_t seed = 1;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin}) {
    for (int axis = 0; axis < 4; ++axis) {
      const double err = run(op, shape, axis, false, ++seed);
      const double limit = (op == ReduceOp::kMax || op == ReduceOp::kMin) && GetParam() == DType::kF32 ? 0.0 : tol();
      EXPECT_LE(err, limit) << "op " << static_cast<int>(op) << " axis " << axis;
    }
  }
}

// Products of values near 1, so that 130 of them neither vanish nor overflow; the relative error
// of a product grows with its length (130 roundings in fp32).
TEST_P(ReduceTest, ProductOverEveryAxisOfA4DTensor) {
  const Shape shape{3, 5, 7, 130};
  for (int axis = 0; axis < 4; ++axis) {
    const double err = run(ReduceOp::kProd, shape, axis, axis % 2 == 0, 70 + axis, 0.8f, 1.25f);
    EXPECT_LE(err, GetParam() == DType::kF32 ? 2e-5 : 1e-3) << "axis " << axis;
  }
}

TEST_P(ReduceTest, NegativeAxesKeepdimAndOtherSchedules) {
  EXPECT_LE(run(ReduceOp::kSum, {4, 1000}, -1, true, 50), tol());  // long rows, several strides each
  EXPECT_LE(run(ReduceOp::kMean, {9, 33}, -1, false, 51), tol());  // short rows: one invocation per row
  EXPECT_LE(run(ReduceOp::kSum, {2, 3, 1}, -3, true, 52), tol());
  EXPECT_LE(run(ReduceOp::kMax, {777}, 0, false, 53), GetParam() == DType::kF32 ? 0.0 : tol());  // to a scalar
  EXPECT_LE(run(ReduceOp::kMin, {1, 1}, 1, false, 54), GetParam() == DType::kF32 ? 0.0 : tol());
}

// Argmax/argmin over every axis on values with many ties: the lowest index wins, or the highest
// with last_index (ONNX's select_last_index).
void check_arg_ties(Runtime& rt, DType d, bool last) {
  for (int which = 0; which < 2; ++which) {
    for (const Shape& shape : {Shape{3, 5, 7, 130}, Shape{6, 200}}) {
      for (int axis = 0; axis < static_cast<int>(shape.size()); ++axis) {
        // Values from a handful of levels, so every row has many ties.
        auto x = random_floats(shape_numel(shape), 100 + axis + which, 0.0f, 5.0f);
        for (float& v : x) v = std::floor(v) * 0.5f;
        Tensor in = upload_f32(rt, d, shape, x);
        Tensor out = Tensor::empty(rt, DType::kI32, without(shape, axis)).value();
        std::vector<int32_t> poison(out.numel(), -7);
        ASSERT_TRUE(out.upload(rt, poison.data(), poison.size() * 4).is_ok());
        Graph g(rt);
        ASSERT_TRUE((which == 0 ? ops::argmax(g, in, out, axis, last) : ops::argmin(g, in, out, axis, last)).is_ok());
        ASSERT_TRUE(g.run().is_ok());
        const View v = view_of(shape, axis);
        auto got = download_i32(rt, out);
        for (int64_t o = 0; o < v.outer; ++o)
          for (int64_t r = 0; r < v.inner; ++r) {
            int64_t best = 0;
            for (int64_t j = 1; j < v.len; ++j) {
              const float c = x[(o * v.len + j) * v.inner + r], b = x[(o * v.len + best) * v.inner + r];
              if (which == 0 ? (c > b || (last && c == b)) : (c < b || (last && c == b))) best = j;
            }
            ASSERT_EQ(got[o * v.inner + r], best)
                << (which ? "argmin" : "argmax") << (last ? " (last)" : "") << " axis " << axis << " of "
                << shape_string(shape) << " at " << o << "," << r;
          }
      }
    }
  }
}

TEST_P(ReduceTest, ArgmaxAndArgminPickTheLowestIndexAmongTies) {
  check_arg_ties(rt(), GetParam(), false);
}

TEST_P(ReduceTest, ArgmaxAndArgminPickTheHighestIndexAmongTiesWithLastIndex) {
  check_arg_ties(rt(), GetParam(), true);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ReduceTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class ReduceMiscTest : public GpuTest {};

TEST_F(ReduceMiscTest, ArgmaxReturnsTheFirstNan) {
  std::vector<float> x(300, 1.0f);
  x[5] = 7.0f;
  x[200] = std::nanf("");
  x[250] = std::nanf("");
  for (int64_t len : {int64_t{300}, int64_t{30}}) {  // both schedules (row per workgroup, per invocation)
    std::vector<float> row(x.begin(), x.begin() + len);
    if (len == 30) row[20] = std::nanf(""), row[25] = std::nanf("");
    Tensor in = upload_f32(rt(), DType::kF32, {1, len}, row);
    Tensor out = Tensor::empty(rt(), DType::kI32, {1}).value();
    Graph g(rt());
    ASSERT_TRUE(ops::argmax(g, in, out, 1).is_ok());
    ASSERT_TRUE(g.run().is_ok());
    EXPECT_EQ(download_i32(rt(), out)[0], len == 300 ? 200 : 20);
  }
}

TEST_F(ReduceMiscTest, WorkIsSplitBeyondOneBinding) {
  struct Limit {
    Limit() { ops::set_max_binding_bytes_for_testing(2048); }
    ~Limit() { ops::set_max_binding_bytes_for_testing(0); }
  } limit;
  for (int axis : {1, 2}) {
    const Shape shape{23, 67, 3};  // a row is 804 bytes: 2 per dispatch, at unaligned offsets
    auto x = random_floats(shape_numel(shape), 70 + axis);
    Tensor in = upload_f32(rt(), DType::kF32, shape, x);
    Tensor out = poisoned(rt(), DType::kF32, without(shape, axis));
    Tensor idx = Tensor::empty(rt(), DType::kI32, without(shape, axis)).value();
    Graph g(rt());
    ASSERT_TRUE(ops::reduce_sum(g, in, out, axis).is_ok());
    ASSERT_TRUE(ops::argmax(g, in, idx, axis).is_ok());
    EXPECT_GE(g.dispatch_count(), 20u);
    ASSERT_TRUE(g.run().is_ok());
    std::vector<double> want, scale;
    reference(ReduceOp::kSum, x, view_of(shape, axis), want, scale);
    auto got = download_f32(rt(), out);
    auto got_idx = download_i32(rt(), idx);
    const View v = view_of(shape, axis);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-6 * scale[i]) << i;
      const int64_t o = static_cast<int64_t>(i) / v.inner, r = static_cast<int64_t>(i) % v.inner;
      int64_t best = 0;
      for (int64_t j = 1; j < v.len; ++j)
        if (x[(o * v.len + j) * v.inner + r] > x[(o * v.len + best) * v.inner + r]) best = j;
      ASSERT_EQ(got_idx[i], best) << i;
    }
  }
}

TEST_F(ReduceMiscTest, MisuseIsRefused) {
  auto t = [&](DType d, const Shape& s) { return Tensor::empty(rt(), d, s).value(); };
  Graph g(rt());
  const Tensor in = t(DType::kF32, {4, 5, 6});
  EXPECT_EQ(ops::reduce_sum(g, in, t(DType::kF32, {4, 6}), 3).code(), StatusCode::kInvalidArgument);   // axis
  EXPECT_EQ(ops::reduce_sum(g, in, t(DType::kF32, {4, 6}), -4).code(), StatusCode::kInvalidArgument);  // axis
  EXPECT_EQ(ops::reduce_sum(g, in, t(DType::kF32, {4, 5}), 1).code(), StatusCode::kInvalidArgument);   // shape
  EXPECT_EQ(ops::reduce_sum(g, in, t(DType::kF32, {6, 4}), 1).code(), StatusCode::kInvalidArgument);   // shape
  EXPECT_EQ(ops::reduce_max(g, in, t(DType::kF16, {4, 6}), 1).code(), StatusCode::kInvalidArgument);   // dtype
  EXPECT_EQ(ops::reduce_min(g, t(DType::kI32, {4, 5}), t(DType::kI32, {4}), 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::reduce_mean(g, t(DType::kF32, {4, 0}), t(DType::kF32, {4}), 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::reduce_sum(g, t(DType::kF32, {}), t(DType::kF32, {}), 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::argmax(g, in, t(DType::kF32, {4, 6}), 1).code(), StatusCode::kInvalidArgument);  // out not i32
  EXPECT_EQ(ops::argmin(g, in, t(DType::kI32, {4, 5, 6}), 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::reduce(g, static_cast<ReduceOp>(8), in, t(DType::kF32, {4, 6}), 1).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
