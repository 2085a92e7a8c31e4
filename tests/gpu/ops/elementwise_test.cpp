// Broadcasting binary arithmetic against a float64 CPU reference: equal shapes, size-1 axes,
// scalars, different ranks, six unmergeable axes, in-place, splitting beyond one binding, misuse.
// Comparisons (NaN, ±0, ±inf), integer comparisons and logic, and Where exactly against C++.
// Remainders (mod, fmod) of floats against std::fmod in float64, of integers exactly.
#include "gpu/ops/elementwise.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <limits>
#include <random>

#include "gpu/ops/cast.h"
#include "gpu/ops/elementwise_basic.h"
#include "gpu/ops/layer_norm.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/softmax.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT
using ops::BinaryOp;

double apply(BinaryOp op, double x, double y) {
  switch (op) {
    case BinaryOp::kAdd:
      return x + y;
    case BinaryOp::kSub:
      return x - y;
    case BinaryOp::kMul:
      return x * y;
    case BinaryOp::kDiv:
      return x / y;
    case BinaryOp::kMax:
      return std::max(x, y);
    case BinaryOp::kMin:
      return std::min(x, y);
    case BinaryOp::kPow:
      return std::pow(x, y);
    case BinaryOp::kPRelu:
      return x < 0 ? y * x : x;
    case BinaryOp::kEqual:
      return x == y;
    case BinaryOp::kLess:
      return x < y;
    case BinaryOp::kGreater:
      return x > y;
    case BinaryOp::kLessOrEqual:
      return x <= y;
    case BinaryOp::kGreaterOrEqual:
      return x >= y;
    case BinaryOp::kAnd:
      return x != 0 && y != 0;
    case BinaryOp::kOr:
      return x != 0 || y != 0;
    case BinaryOp::kXor:
      return (x != 0) != (y != 0);
    case BinaryOp::kMod: {
      const double r = std::fmod(x, y);
      return r != 0 && (r < 0) != (y < 0) ? r + y : r;
    }
    case BinaryOp::kFmod:
      return std::fmod(x, y);
    case BinaryOp::kShiftLeft:  // i32 words only: IntegerShiftsMoveUnsignedWords
    case BinaryOp::kShiftRight:
      break;
  }
  return 0;
}

constexpr BinaryOp kComparisons[] = {BinaryOp::kEqual, BinaryOp::kLess, BinaryOp::kGreater, BinaryOp::kLessOrEqual,
                                     BinaryOp::kGreaterOrEqual};

// Index of out element `i` in an operand of shape `s` broadcast to `out`.
int64_t source_index(int64_t i, const Shape& s, const Shape& out) {
  int64_t idx = 0, step = 1;
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    const int64_t c = i % out[d];
    i /= out[d];
    const int sd = d - static_cast<int>(out.size() - s.size());
    if (sd >= 0) {
      if (s[sd] != 1) idx += c * step;
      step *= s[sd];
    }
  }
  return idx;
}

// Worst error: add/sub relative to |x| + |y| (the scale of their rounding), mul/div relative to
// |want|, plus `floor` (fp16 results below 6e-5 are subnormal, with absolute spacing 6e-8).
double check(BinaryOp op, const std::vector<float>& a, const Shape& sa, const std::vector<float>& b, const Shape& sb,
             const std::vector<float>& got, const Shape& so, double floor = 1e-30) {
  double worst = 0;
  for (int64_t i = 0; i < shape_numel(so); ++i) {
    const double x = a[source_index(i, sa, so)], y = b[source_index(i, sb, so)];
    const double want = apply(op, x, y);
    if (!std::isfinite(got[i])) return INFINITY;
    const double scale = (op == BinaryOp::kAdd || op == BinaryOp::kSub) ? std::abs(x) + std::abs(y) : std::abs(want);
    worst = std::max(worst, std::abs(got[i] - want) / (scale + floor));
  }
  return worst;
}

class ElementwiseTest : public GpuTest, public ::testing::WithParamInterface<DType> {
 protected:
  // pow: GLSL's pow (exp2 of a log2) carries a few fp32 ulps more than one rounding.
  double tolerance(BinaryOp op) const {
    return GetParam() == DType::kF32 ? (op == BinaryOp::kPow ? 4e-6 : 1e-6) : 1e-3;
  }
  double floor() const { return GetParam() == DType::kF32 ? 1e-30 : 1e-4; }
  // Runs every op on fresh data of the given shapes and returns nothing; fails the test on error.
  void run_case(const Shape& sa, const Shape& sb, uint32_t seed) {
    const DType d = GetParam();
    const Shape so = ops::broadcast_shape(sa, sb).value();
    for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv, BinaryOp::kMax, BinaryOp::kMin,
                        BinaryOp::kPow, BinaryOp::kPRelu}) {
      seed += 17;
      auto a = random_floats(shape_numel(sa), seed, -2.0f, 2.0f);
      auto b = random_floats(shape_numel(sb), seed + 1, 0.5f, 2.0f);  // away from 0 for div
      for (size_t i = 0; i < b.size(); i += 2) b[i] = -b[i];
      if (op == BinaryOp::kPow) {
        for (float& x : a) x = std::abs(x) + 0.25f;  // a positive base: any real exponent
      }
      Tensor ta = upload_f32(rt(), d, sa, a), tb = upload_f32(rt(), d, sb, b);
      Tensor out = poisoned(rt(), d, so);
      Graph g(rt());
      Status s = ops::binary(g, op, ta, tb, out);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      ASSERT_TRUE(g.run().is_ok());
      EXPECT_LE(check(op, download_f32(rt(), ta), sa, download_f32(rt(), tb), sb, download_f32(rt(), out), so, floor()),
                tolerance(op))
          << "op " << static_cast<int>(op) << " " << shape_string(sa) << " with " << shape_string(sb);
    }
  }
};

TEST_P(ElementwiseTest, EqualShapesTakeTheFastPath) {
  run_case({7, 129}, {7, 129}, 1);
}

// Whole 16-byte words take the grid-stride word kernel; 2^22 + 64 elements are more words (fp16:
// 2^19 + 8, fp32: 2^20 + 16) than the grid's 2048 × 256 invocations, so invocations loop.
TEST_P(ElementwiseTest, EqualShapesOfWholeWordsTakeTheWordPath) {
  run_case({6, 128}, {6, 128}, 2);
  run_case({(int64_t{1} << 22) + 64}, {(int64_t{1} << 22) + 64}, 3);
}

TEST_P(ElementwiseTest, SizeOneAxesBroadcastBothWays) {
  run_case({3, 1, 5}, {4, 1}, 2);
  run_case({1, 37}, {29, 1}, 3);
  run_case({5, 1, 1, 3}, {5, 7, 2, 1}, 4);
}

TEST_P(ElementwiseTest, ScalarsBroadcastAgainstAnything) {
  run_case({}, {6, 11}, 5);
  run_case({6, 11}, {}, 6);
  run_case({1}, {301}, 7);
  run_case({}, {}, 8);
}

TEST_P(ElementwiseTest, DifferentRanksAlignAtTheLastAxis) {
  run_case({2, 3, 33, 17}, {17}, 9);      // bias over the feature axis
  run_case({33, 1}, {2, 3, 33, 17}, 10);  // lower rank on the left
  run_case({4, 1, 6}, {2, 1, 5, 1}, 11);
}

TEST_P(ElementwiseTest, SixUnmergeableAxesWork) {
  run_case({2, 1, 3, 1, 4, 1}, {1, 5, 1, 6, 1, 7}, 12);
}

TEST_P(ElementwiseTest, HigherRanksWorkWhenTheyMerge) {
  run_case({1, 2, 3, 2, 3, 2, 5}, {2, 3, 2, 3, 2, 5}, 13);
}

TEST_P(ElementwiseTest, InPlaceOnTheFirstOperand) {
  const DType d = GetParam();
  auto a = random_floats(5 * 77, 21), b = random_floats(77, 22);
  Tensor ta = upload_f32(rt(), d, {5, 77}, a), tb = upload_f32(rt(), d, {77}, b);
  auto sa = download_f32(rt(), ta), sb = download_f32(rt(), tb);
  Graph g(rt());
  ASSERT_TRUE(ops::binary_mul(g, ta, tb, ta).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  EXPECT_LE(check(BinaryOp::kMul, sa, {5, 77}, sb, {77}, download_f32(rt(), ta), {5, 77}, floor()),
            tolerance(BinaryOp::kMul));
}

// Comparisons of floats into i32 0/1 against C++'s (IEEE) comparisons of the stored values: few
// distinct values so that ties occur, ±0 (equal), ±inf, and NaN (every comparison false), over the
// broadcasting cases above.
TEST_P(ElementwiseTest, ComparisonsGiveBooleansAndNaNComparesFalse) {
  const DType d = GetParam();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float pool[] = {-1.5f, -0.0f, 0.0f, 0.25f, 1.0f, 3.0f, inf, -inf, nan};
  struct Case {
    Shape a, b;
  };
  uint32_t seed = 60;
  for (const Case& c : {Case{{7, 129}, {7, 129}}, Case{{6, 128}, {6, 128}}, Case{{3, 1, 5}, {4, 1}}, Case{{}, {6, 11}},
                        Case{{2, 3, 33, 17}, {17}}, Case{{2, 1, 3, 1, 4, 1}, {1, 5, 1, 6, 1, 7}}}) {
    const auto values = [&](const Shape& s) {
      std::vector<float> v(static_cast<size_t>(shape_numel(s)));
      std::mt19937 gen(++seed);
      for (float& x : v) x = pool[gen() % std::size(pool)];
      return v;
    };
    const Shape so = ops::broadcast_shape(c.a, c.b).value();
    Tensor ta = upload_f32(rt(), d, c.a, values(c.a)), tb = upload_f32(rt(), d, c.b, values(c.b));
    const std::vector<float> a = download_f32(rt(), ta), b = download_f32(rt(), tb);
    for (const BinaryOp op : kComparisons) {
      Tensor out = poisoned(rt(), DType::kI32, so);
      Graph g(rt());
      const Status s = ops::binary(g, op, ta, tb, out);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      ASSERT_TRUE(g.run().is_ok());
      std::vector<int32_t> got(static_cast<size_t>(shape_numel(so)));
      ASSERT_TRUE(out.download(rt(), got.data(), got.size() * 4).is_ok());
      for (int64_t i = 0; i < shape_numel(so); ++i) {
        const double x = a[source_index(i, c.a, so)], y = b[source_index(i, c.b, so)];
        ASSERT_EQ(got[i], static_cast<int32_t>(apply(op, x, y)))
            << "op " << static_cast<int>(op) << " of " << x << " and " << y << ", " << shape_string(c.a) << " with "
            << shape_string(c.b);
      }
    }
  }
}

// Where against a loop: cond, x and y broadcast three ways, inf and NaN moved unchanged.
TEST_P(ElementwiseTest, WhereSelectsWithThreeWayBroadcasting) {
  const DType d = GetParam();
  struct Case {
    Shape c, x, y;
  };
  uint32_t seed = 80;
  for (const Case& k : {Case{{5, 67}, {5, 67}, {5, 67}}, Case{{4, 64}, {4, 64}, {4, 64}}, Case{{3, 1}, {1, 7}, {}},
                        Case{{7}, {2, 3, 7}, {3, 1}}, Case{{2, 1, 3, 1, 4, 1}, {1, 5, 1, 6, 1, 1}, {1, 1, 1, 1, 1, 7}},
                        Case{{1, 1}, {1}, {1, 1, 1}}}) {
    const Shape so = ops::broadcast_shape(ops::broadcast_shape(k.c, k.x).value(), k.y).value();
    std::vector<int32_t> cond(static_cast<size_t>(shape_numel(k.c)));
    std::mt19937 gen(++seed);
    for (int32_t& v : cond) v = static_cast<int32_t>(gen() % 3) - 1;  // −1 and 1 are true, 0 false
    std::vector<float> x = random_floats(shape_numel(k.x), ++seed), y = random_floats(shape_numel(k.y), ++seed);
    if (x.size() > 2) {
      x[0] = std::numeric_limits<float>::quiet_NaN();
      x[1] = -std::numeric_limits<float>::infinity();
    }
    Tensor tc = Tensor::from_host(rt(), DType::kI32, k.c, cond.data(), cond.size() * 4).value();
    Tensor tx = upload_f32(rt(), d, k.x, x), ty = upload_f32(rt(), d, k.y, y);
    Tensor out = poisoned(rt(), d, so);
    Graph g(rt());
    const Status s = ops::where(g, tc, tx, ty, out);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_TRUE(g.run().is_ok());
    const std::vector<float> sx = download_f32(rt(), tx), sy = download_f32(rt(), ty), got = download_f32(rt(), out);
    for (int64_t i = 0; i < shape_numel(so); ++i) {
      const float want =
          cond[source_index(i, k.c, so)] != 0 ? sx[source_index(i, k.x, so)] : sy[source_index(i, k.y, so)];
      ASSERT_TRUE(got[i] == want || (std::isnan(got[i]) && std::isnan(want)))
          << "at " << i << ": " << got[i] << " != " << want << ", " << shape_string(k.c) << ", " << shape_string(k.x)
          << ", " << shape_string(k.y);
    }
  }
}

// Remainders of floats against float64's: mixed signs, quotients up to 1000 (whole multiples
// among them, where fmod's result is ±0), broadcast; within 1e-6·|b| for fp32's arithmetic and
// fp16's output rounding on top.
TEST_P(ElementwiseTest, RemaindersTakeTheSignOfTheDivisorOrTheDividend) {
  const DType d = GetParam();
  struct Case {
    Shape a, b;
  };
  uint32_t seed = 80;
  for (const Case& c :
       {Case{{7, 129}, {7, 129}}, Case{{3, 1, 5}, {4, 1}}, Case{{2, 3, 33, 17}, {17}}, Case{{}, {6, 11}}}) {
    auto a = random_floats(shape_numel(c.a), ++seed, -1000.0f, 1000.0f);
    auto b = random_floats(shape_numel(c.b), ++seed, 0.5f, 8.0f);
    for (size_t i = 0; i < b.size(); i += 2) b[i] = -b[i];
    for (size_t i = 0; i < a.size(); i += 3) a[i] = std::round(a[i] / 8.0f) * 4.0f;  // multiples of 4
    for (size_t i = 0; i < b.size(); i += 3) b[i] = std::copysign(std::round(std::abs(b[i])) * 0.5f + 0.5f, b[i]);
    Tensor ta = upload_f32(rt(), d, c.a, a), tb = upload_f32(rt(), d, c.b, b);
    const auto sa = download_f32(rt(), ta), sb = download_f32(rt(), tb);
    const Shape so = ops::broadcast_shape(c.a, c.b).value();
    for (const BinaryOp op : {BinaryOp::kMod, BinaryOp::kFmod}) {
      Tensor out = poisoned(rt(), d, so);
      Graph g(rt());
      ASSERT_TRUE(ops::binary(g, op, ta, tb, out).is_ok());
      ASSERT_TRUE(g.run().is_ok());
      const auto got = download_f32(rt(), out);
      int bad = 0;
      for (int64_t i = 0; i < shape_numel(so); ++i) {
        const double x = sa[source_index(i, c.a, so)], y = sb[source_index(i, c.b, so)];
        const double want = apply(op, x, y);
        const double tol = 1e-6 * std::abs(y) + (d == DType::kF16 ? 1e-3 * std::abs(want) : 0.0);
        if (!(std::abs(got[i] - want) <= tol) && ++bad <= 5) {
          ADD_FAILURE() << (op == BinaryOp::kMod ? "mod(" : "fmod(") << x << ", " << y << ") = " << got[i] << ", want "
                        << want << " at " << i << " of " << shape_string(so);
        }
      }
      EXPECT_EQ(bad, 0);
    }
  }
}

TEST_P(ElementwiseTest, EmptyTensorsRecordNothing) {
  const DType d = GetParam();
  Tensor a = Tensor::empty(rt(), d, {0, 3}).value(), b = Tensor::empty(rt(), d, {3}).value();
  Tensor out = Tensor::empty(rt(), d, {0, 3}).value();
  Graph g(rt());
  EXPECT_TRUE(ops::binary_add(g, a, b, out).is_ok());
  EXPECT_EQ(g.dispatch_count(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ElementwiseTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class ElementwiseMisuseTest : public GpuTest {};

// ops::binary of two i32 tensors into a new [shape] one, downloaded.
std::vector<int32_t> binary_i32(Runtime& rt, BinaryOp op, const Tensor& a, const Tensor& b, const Shape& shape) {
  Tensor out = Tensor::empty(rt, DType::kI32, shape).value();
  Graph g(rt);
  EXPECT_TRUE(ops::binary(g, op, a, b, out).is_ok());
  EXPECT_TRUE(g.run().is_ok());
  std::vector<int32_t> got(static_cast<size_t>(out.numel()));
  EXPECT_TRUE(out.download(rt, got.data(), got.size() * 4).is_ok());
  return got;
}

TEST_F(ElementwiseMisuseTest, BadShapesAndDtypesAreRefused) {
  auto t = [&](DType d, const Shape& s) { return Tensor::empty(rt(), d, s).value(); };
  Graph g(rt());
  // Incompatible shapes.
  EXPECT_EQ(ops::binary_add(g, t(DType::kF32, {3, 4}), t(DType::kF32, {5}), t(DType::kF32, {3, 4})).code(),
            StatusCode::kInvalidArgument);
  // out is not the broadcast shape (even if the element count matches).
  EXPECT_EQ(ops::binary_add(g, t(DType::kF32, {3, 4}), t(DType::kF32, {4}), t(DType::kF32, {4, 3})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::binary_add(g, t(DType::kF32, {3, 1}), t(DType::kF32, {4}), t(DType::kF32, {3, 1})).code(),
            StatusCode::kInvalidArgument);
  // Mixed and unsupported dtypes.
  EXPECT_EQ(ops::binary_sub(g, t(DType::kF32, {4}), t(DType::kF16, {4}), t(DType::kF32, {4})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::binary(g, BinaryOp::kPow, t(DType::kI32, {4}), t(DType::kI32, {4}), t(DType::kI32, {4})).code(),
            StatusCode::kInvalidArgument);  // integers: add, sub, mul, div, max and min only
  EXPECT_EQ(ops::binary_mul(g, t(DType::kU8, {4}), t(DType::kU8, {4}), t(DType::kU8, {4})).code(),
            StatusCode::kInvalidArgument);
  // Seven independent axes.
  EXPECT_EQ(ops::binary_div(g, t(DType::kF32, {2, 1, 2, 1, 2, 1, 2}), t(DType::kF32, {1, 2, 1, 2, 1, 2, 1}),
                            t(DType::kF32, {2, 2, 2, 2, 2, 2, 2}))
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ops::binary(g, static_cast<BinaryOp>(18), t(DType::kF32, {4}), t(DType::kF32, {4}), t(DType::kF32, {4})).code(),
      StatusCode::kInvalidArgument);
  // Comparisons write i32; logic takes i32 booleans only.
  EXPECT_EQ(ops::binary(g, BinaryOp::kLess, t(DType::kF32, {4}), t(DType::kF32, {4}), t(DType::kF32, {4})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::binary(g, BinaryOp::kEqual, t(DType::kF16, {4}), t(DType::kF32, {4}), t(DType::kI32, {4})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::binary(g, BinaryOp::kAnd, t(DType::kF32, {4}), t(DType::kF32, {4}), t(DType::kF32, {4})).code(),
            StatusCode::kInvalidArgument);
  // Where: cond i32, x, y and out of one dtype, shapes that broadcast to out's.
  EXPECT_EQ(ops::where(g, t(DType::kF32, {4}), t(DType::kF32, {4}), t(DType::kF32, {4}), t(DType::kF32, {4})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::where(g, t(DType::kI32, {4}), t(DType::kF32, {4}), t(DType::kF16, {4}), t(DType::kF32, {4})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::where(g, t(DType::kI32, {3}), t(DType::kF32, {4}), t(DType::kF32, {4}), t(DType::kF32, {4})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::where(g, t(DType::kI32, {4, 1}), t(DType::kF32, {4}), t(DType::kF32, {4}), t(DType::kF32, {4})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

// i32 comparisons with broadcasting, and logic of booleans where any non-zero word counts as true
// (0/1 in, 0/1 out), against C++.
TEST_F(ElementwiseMisuseTest, IntegerComparisonsAndLogicGiveBooleans) {
  const std::vector<int32_t> a{7, -7, 0, 2147483647, INT32_MIN, 2, 5, -5};  // [2, 4]
  const std::vector<int32_t> b{7, -8, 0, 2};                                // [4], broadcast over the rows
  Tensor ta = Tensor::from_host(rt(), DType::kI32, {2, 4}, a.data(), a.size() * 4).value();
  Tensor tb = Tensor::from_host(rt(), DType::kI32, {4}, b.data(), b.size() * 4).value();
  for (const BinaryOp op : {BinaryOp::kEqual, BinaryOp::kLess, BinaryOp::kGreater, BinaryOp::kLessOrEqual,
                            BinaryOp::kGreaterOrEqual, BinaryOp::kAnd, BinaryOp::kOr, BinaryOp::kXor}) {
    Tensor out = poisoned(rt(), DType::kI32, {2, 4});
    Graph g(rt());
    ASSERT_TRUE(ops::binary(g, op, ta, tb, out).is_ok());
    ASSERT_TRUE(g.run().is_ok());
    std::vector<int32_t> got(8);
    ASSERT_TRUE(out.download(rt(), got.data(), got.size() * 4).is_ok());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i], static_cast<int32_t>(apply(op, a[i], b[i % 4])))
          << "op " << static_cast<int>(op) << " of " << a[i] << " and " << b[i % 4];
    }
  }
}

// Comparisons (f16 operands, i32 out: windows of two widths) and Where beyond one binding, at a
// lowered limit.
TEST_F(ElementwiseMisuseTest, ComparisonsAndWhereBeyondOneBindingAreSplit) {
  struct Limit {
    Limit() { ops::set_max_binding_bytes_for_testing(1024); }
    ~Limit() { ops::set_max_binding_bytes_for_testing(0); }
  } limit;
  const Shape sa{37, 101}, sb{101};
  Tensor ta = upload_f32(rt(), DType::kF16, sa, random_floats(shape_numel(sa), 90));
  Tensor tb = upload_f32(rt(), DType::kF16, sb, random_floats(shape_numel(sb), 91));
  Tensor cond = poisoned(rt(), DType::kI32, sa), out = poisoned(rt(), DType::kF16, sa);
  Graph g(rt());
  ASSERT_TRUE(ops::binary(g, BinaryOp::kLess, ta, tb, cond).is_ok());
  ASSERT_TRUE(ops::where(g, cond, ta, tb, out).is_ok());
  EXPECT_GT(g.dispatch_count(), 8u);
  ASSERT_TRUE(g.run().is_ok());
  const std::vector<float> a = download_f32(rt(), ta), b = download_f32(rt(), tb), got = download_f32(rt(), out);
  for (int64_t i = 0; i < shape_numel(sa); ++i) ASSERT_EQ(got[i], std::min(a[i], b[i % 101])) << "at " << i;
}

// i32 operands take integer arithmetic: C's truncating division (by zero: 0), wrapping products,
// broadcasting as for floats.
TEST_F(ElementwiseMisuseTest, IntegerOperandsTakeIntegerArithmetic) {
  const std::vector<int32_t> a{7, -7, 7, -7, 2147483647, 0, 5, -5};  // [2, 4]
  const std::vector<int32_t> b{2, 2, -2, -2};                        // [4], broadcast over the rows
  Tensor ta = Tensor::from_host(rt(), DType::kI32, {2, 4}, a.data(), a.size() * 4).value();
  Tensor tb = Tensor::from_host(rt(), DType::kI32, {4}, b.data(), b.size() * 4).value();
  const std::vector<int32_t> zeros{0, 0, 0, 0};
  Tensor tz = Tensor::from_host(rt(), DType::kI32, {4}, zeros.data(), zeros.size() * 4).value();
  auto run = [&](BinaryOp op, const Tensor& rhs) { return binary_i32(rt(), op, ta, rhs, {2, 4}); };
  const int32_t wrapped = static_cast<int32_t>(static_cast<uint32_t>(2147483647) * 2u);  // −2
  EXPECT_EQ(run(BinaryOp::kAdd, tb), (std::vector<int32_t>{9, -5, 5, -9, -2147483647, 2, 3, -7}));
  EXPECT_EQ(run(BinaryOp::kSub, tb), (std::vector<int32_t>{5, -9, 9, -5, 2147483645, -2, 7, -3}));
  EXPECT_EQ(run(BinaryOp::kMul, tb), (std::vector<int32_t>{14, -14, -14, 14, wrapped, 0, -10, 10}));
  EXPECT_EQ(run(BinaryOp::kDiv, tb), (std::vector<int32_t>{3, -3, -3, 3, 1073741823, 0, -2, 2}));
  EXPECT_EQ(run(BinaryOp::kDiv, tz), (std::vector<int32_t>(8, 0)));
  EXPECT_EQ(run(BinaryOp::kMax, tb), (std::vector<int32_t>{7, 2, 7, -2, 2147483647, 2, 5, -2}));
  EXPECT_EQ(run(BinaryOp::kMin, tb), (std::vector<int32_t>{2, -7, -2, -7, 2, 0, -2, -5}));
  EXPECT_EQ(run(BinaryOp::kMod, tb), (std::vector<int32_t>{1, 1, -1, -1, 1, 0, -1, -1}));  // sign of b
  EXPECT_EQ(run(BinaryOp::kFmod, tb), (std::vector<int32_t>{1, -1, 1, -1, 1, 0, 1, -1}));  // sign of a
  EXPECT_EQ(run(BinaryOp::kMod, tz), (std::vector<int32_t>(8, 0)));
  EXPECT_EQ(run(BinaryOp::kFmod, tz), (std::vector<int32_t>(8, 0)));
  // −2^31 by −1: the quotient overflows, the remainder is 0.
  const std::vector<int32_t> lows{std::numeric_limits<int32_t>::min(), -3, 3, 0};
  const std::vector<int32_t> minus_ones{-1, 5, -5, -1};
  Tensor tl = Tensor::from_host(rt(), DType::kI32, {4}, lows.data(), 16).value();
  Tensor tm = Tensor::from_host(rt(), DType::kI32, {4}, minus_ones.data(), 16).value();
  for (const BinaryOp op : {BinaryOp::kMod, BinaryOp::kFmod}) {
    Tensor out = Tensor::empty(rt(), DType::kI32, {4}).value();
    Graph g(rt());
    ASSERT_TRUE(ops::binary(g, op, tl, tm, out).is_ok());
    ASSERT_TRUE(g.run().is_ok());
    std::vector<int32_t> got(4);
    ASSERT_TRUE(out.download(rt(), got.data(), 16).is_ok());
    EXPECT_EQ(got, op == BinaryOp::kMod ? (std::vector<int32_t>{0, 2, -2, 0}) : (std::vector<int32_t>{0, -3, 3, 0}));
  }
}

// Shifts of i32 words as unsigned: zeros shifted in from either side, the sign bit shifted out or
// down like any other, and 0 for shifts of 32 or more or negative ones; broadcast as for floats.
TEST_F(ElementwiseMisuseTest, IntegerShiftsMoveUnsignedWords) {
  const std::vector<int32_t> a{1, 255, -1, 65535, 7, std::numeric_limits<int32_t>::min(), 12, 3};  // [2, 4]
  const std::vector<int32_t> b{0, 4, 31, 32, 1, 31, 40, -1};                                       // [2, 4]
  const std::vector<int32_t> s{2};                                                                 // [1]
  Tensor ta = Tensor::from_host(rt(), DType::kI32, {2, 4}, a.data(), a.size() * 4).value();
  Tensor tb = Tensor::from_host(rt(), DType::kI32, {2, 4}, b.data(), b.size() * 4).value();
  Tensor ts = Tensor::from_host(rt(), DType::kI32, {1}, s.data(), s.size() * 4).value();
  auto run = [&](BinaryOp op, const Tensor& rhs) { return binary_i32(rt(), op, ta, rhs, {2, 4}); };
  const int32_t low = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(run(BinaryOp::kShiftLeft, tb), (std::vector<int32_t>{1, 4080, low, 0, 14, 0, 0, 0}));
  EXPECT_EQ(run(BinaryOp::kShiftRight, tb), (std::vector<int32_t>{1, 15, 1, 0, 3, 1, 0, 0}));
  EXPECT_EQ(run(BinaryOp::kShiftLeft, ts), (std::vector<int32_t>{4, 1020, -4, 262140, 28, 0, 48, 12}));
  EXPECT_EQ(run(BinaryOp::kShiftRight, ts), (std::vector<int32_t>{0, 63, 1073741823, 16383, 1, 536870912, 3, 0}));
  Graph g(rt());
  Tensor f = Tensor::empty(rt(), DType::kF32, {4}).value();
  EXPECT_EQ(ops::binary(g, BinaryOp::kShiftLeft, f, f, f).code(), StatusCode::kInvalidArgument);
}

// Float remainders' special operands, as C's fmod: by ±0 NaN, of ±inf NaN, by ±inf the dividend
// (mod: the divisor where the signs differ, as NumPy's), of ±0 ±0.
TEST_F(ElementwiseMisuseTest, FloatRemaindersOfSpecialOperandsFollowC) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> a{5.0f, -5.0f, inf, -inf, 5.0f, -5.0f, 0.0f, -0.0f, 5.5f, -5.5f};
  const std::vector<float> b{0.0f, -0.0f, 2.0f, 2.0f, inf, inf, 3.0f, 3.0f, -2.0f, 2.0f};
  Tensor ta = upload_f32(rt(), DType::kF32, {10}, a), tb = upload_f32(rt(), DType::kF32, {10}, b);
  for (const BinaryOp op : {BinaryOp::kMod, BinaryOp::kFmod}) {
    Tensor out = poisoned(rt(), DType::kF32, {10});
    Graph g(rt());
    ASSERT_TRUE(ops::binary(g, op, ta, tb, out).is_ok());
    ASSERT_TRUE(g.run().is_ok());
    const auto got = download_f32(rt(), out);
    for (size_t i = 0; i < a.size(); ++i) {
      const double want = apply(op, a[i], b[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got[i])) << i << ": " << got[i];
      } else {
        EXPECT_EQ(got[i], want) << (op == BinaryOp::kMod ? "mod(" : "fmod(") << a[i] << ", " << b[i] << ")";
      }
    }
  }
}

// Splitting beyond one binding, exercised on small tensors by lowering the limit the ops split at
// (unary_test runs one real 128 MiB case). Chunks start at unaligned elements, so windows and
// their base offsets are exercised too.
TEST_F(ElementwiseMisuseTest, OperandsLargerThanOneBindingAreSplit) {
  struct Limit {
    Limit() { ops::set_max_binding_bytes_for_testing(1024); }
    ~Limit() { ops::set_max_binding_bytes_for_testing(0); }
  } limit;
  struct Case {
    Shape a, b;
  };
  uint32_t seed = 40;
  for (const Case& c :
       {Case{{37, 101}, {101}}, Case{{37, 101}, {37, 101}}, Case{{1, 37, 1, 21}, {37, 5, 1}}, Case{{5, 1}, {5, 151}}}) {
    for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kDiv}) {
      const Shape so = ops::broadcast_shape(c.a, c.b).value();
      auto a = random_floats(shape_numel(c.a), ++seed), b = random_floats(shape_numel(c.b), ++seed, 0.5f, 2.0f);
      Tensor ta = upload_f32(rt(), DType::kF32, c.a, a), tb = upload_f32(rt(), DType::kF32, c.b, b);
      Tensor out = poisoned(rt(), DType::kF32, so);
      Graph g(rt());
      Status s = ops::binary(g, op, ta, tb, out);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      EXPECT_GT(g.dispatch_count(), 4u);
      ASSERT_TRUE(g.run().is_ok());
      EXPECT_LE(check(op, a, c.a, b, c.b, download_f32(rt(), out), so), 1e-6)
          << shape_string(c.a) << " with " << shape_string(c.b);
    }
  }
  // A single row of out beyond the limit cannot be split: refused, not crashed.
  Tensor a = Tensor::empty(rt(), DType::kF32, {3, 300}).value(), b = Tensor::empty(rt(), DType::kF32, {300}).value();
  Graph g(rt());
  EXPECT_EQ(ops::binary_add(g, a, b, a).code(), StatusCode::kInvalidArgument);
}

// ---- Memory bandwidth (opt-in: RECON_MEM_BENCH=1) ----
// What a copy reaches with one 4-byte word per invocation and a workgroup per 256 words
// (copy_u32) against a fixed grid looping over 16-byte words (copy_grid, what ops::copy runs), and
// the element-wise ops' own kernels on the same bytes. One source and one destination, each
// application after the last.

class MemoryBench : public GpuTest {};

TEST_F(MemoryBench, CopyKernelsAgainstTheElementwiseOps) {
  if (std::getenv("RECON_MEM_BENCH") == nullptr) GTEST_SKIP() << "set RECON_MEM_BENCH=1 to run";
  const uint32_t sms = std::max<uint32_t>(rt().caps().shader_core_count, 1);
  const bool cpu = rt().caps().device_type == VK_PHYSICAL_DEVICE_TYPE_CPU;  // minutes per size there
  for (const int64_t mib : {int64_t{16}, int64_t{64}, int64_t{256}}) {
    if (cpu && mib > 16) break;
    const int64_t words = mib * (1 << 20) / 16;
    // Random operands: a driver may compress memory, and never-written buffers would flatter it.
    Tensor src = upload_f32(rt(), DType::kF32, {words * 4}, random_floats(words * 4, 11, -2.0f, 2.0f));
    Tensor other = upload_f32(rt(), DType::kF32, {words * 4}, random_floats(words * 4, 12, -2.0f, 2.0f));
    Tensor dst = Tensor::empty(rt(), DType::kF32, {words * 4}).value();
    Tensor half = Tensor::empty(rt(), DType::kF16, {words * 4}).value();
    constexpr int kReps = 20;
    const auto report = [&](const char* what, Graph& g, double bytes) {
      const double s = seconds_per_dispatch(g, kReps, 2);
      std::printf("[mem] %4lld MiB %-34s %8.1f us  %7.0f GB/s\n", (long long)mib, what, s * 1e6, bytes / s * 1e-9);
    };
    const double copy_bytes = 2.0 * words * 16;
    {
      Graph g(rt());
      const uint32_t push = static_cast<uint32_t>(words * 4);
      for (int i = 0; i < kReps; ++i) {
        ASSERT_TRUE(g.dispatch("copy_u32", {}, {{src, Access::kRead}, {dst, Access::kWrite}}, push,
                               Graph::grid_1d((push + 255) / 256))
                        .is_ok());
      }
      report("copy_u32 (4 B per invocation)", g, copy_bytes);
    }
    for (const uint32_t unroll : {1u, 4u}) {
      for (const uint32_t per_sm : {4u, 8u, 16u}) {
        Graph g(rt());
        const uint32_t push = static_cast<uint32_t>(words), spec[] = {unroll};
        for (int i = 0; i < kReps; ++i) {
          ASSERT_TRUE(
              g.dispatch("copy_grid", spec, {{src, Access::kRead}, {dst, Access::kWrite}}, push, {sms * per_sm, 1, 1})
                  .is_ok());
        }
        char what[64];
        std::snprintf(what, sizeof(what), "copy_grid unroll %u, %2u groups/SM", unroll, per_sm);
        report(what, g, copy_bytes);
      }
    }
    {
      Graph g(rt());
      for (int i = 0; i < kReps; ++i) ASSERT_TRUE(ops::binary_sub(g, src, other, dst).is_ok());
      report("binary sub f32", g, 3.0 * words * 16);
    }
    {
      Graph g(rt());
      for (int i = 0; i < kReps; ++i) ASSERT_TRUE(ops::cast(g, src, half).is_ok());
      report("cast f32 -> f16", g, 1.5 * words * 16);
    }
    {  // the ops bench's ring (bench/ops/op_graph.cpp): each sub reads what the previous one wrote
      Tensor slots[3] = {src, other, dst};
      Graph g(rt());
      for (int i = 0; i < kReps; ++i) {
        ASSERT_TRUE(ops::binary_sub(g, slots[i % 3], slots[(i + 1) % 3], slots[(i + 2) % 3]).is_ok());
      }
      report("binary sub f32, chained over 3 slots", g, 3.0 * words * 16);
    }
    for (const DType dtype : {DType::kF32, DType::kF16}) {  // the row kernels on the same bytes
      const int64_t cols = 1024, rows = words * 4 / cols;   // src's (or half's) elements
      const Tensor x = dtype == DType::kF32 ? src : half;
      Tensor y = Tensor::empty(rt(), dtype, {rows, cols}).value();
      const Tensor xr = x.reshape({rows, cols}).value();
      const Tensor w = Tensor::empty(rt(), dtype, {cols}).value(), b = Tensor::empty(rt(), dtype, {cols}).value();
      const double bytes = 2.0 * static_cast<double>(rows * cols * dtype_size(dtype));
      Graph ln(rt()), sm(rt());
      for (int i = 0; i < kReps; ++i) {
        ASSERT_TRUE(ops::layer_norm(ln, xr, Arg(w), Arg(b), y, 1e-6f).is_ok());
        ASSERT_TRUE(ops::softmax(sm, xr, y).is_ok());
      }
      report(dtype == DType::kF32 ? "layer_norm f32, 1024 cols" : "layer_norm f16, 1024 cols", ln, bytes);
      report(dtype == DType::kF32 ? "softmax f32, 1024 cols" : "softmax f16, 1024 cols", sm, bytes);
    }
  }
}

}  // namespace
}  // namespace recon::gpu
