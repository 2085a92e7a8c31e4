// Unary activations against float64 std:: math: every op × dtype on ragged shapes, a dense sweep of
// GELU/erf accuracy over [−10, 10], extreme inputs, in-place, splitting beyond one binding, misuse.
#include "gpu/ops/unary.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gpu/ops/layout.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT
using ops::UnaryOp;

// γ, δ of the parameterised ops in the tests below.
constexpr double kGamma = 0.3, kDelta = 1.7;

double reference(UnaryOp op, double x) {
  switch (op) {
    case UnaryOp::kErf:
      return std::erf(x);
    case UnaryOp::kSqrt:
      return std::sqrt(x);
    case UnaryOp::kReciprocal:
      return 1.0 / x;
    case UnaryOp::kAbs:
      return std::abs(x);
    case UnaryOp::kLog:
      return std::log(x);
    case UnaryOp::kPow:
      return std::pow(x, kGamma);
    case UnaryOp::kLeakyRelu:
      return x >= 0 ? x : kGamma * x;
    case UnaryOp::kClip:
      return std::min(std::max(x, kGamma), kDelta);
    case UnaryOp::kHardSwish:
      return x * std::clamp(x / 6 + 0.5, 0.0, 1.0);
    case UnaryOp::kElu:
      return x > 0 ? x : kGamma * std::expm1(x);
    case UnaryOp::kSoftplus:
      return std::log1p(std::exp(x));
    case UnaryOp::kFloor:
      return std::floor(x);
    case UnaryOp::kCeil:
      return std::ceil(x);
    case UnaryOp::kSin:
      return std::sin(x);
    case UnaryOp::kCos:
      return std::cos(x);
    case UnaryOp::kSign:
      return x > 0 ? 1 : x < 0 ? -1 : 0;
    case UnaryOp::kRound:
      return std::nearbyint(x);
    case UnaryOp::kSelu:
      return kGamma * (x > 0 ? x : kDelta * std::expm1(x));
    case UnaryOp::kSoftsign:
      return x / (1 + std::abs(x));
    case UnaryOp::kThresholdedRelu:
      return x > kGamma ? x : 0;
    case UnaryOp::kTan:
      return std::tan(x);
    case UnaryOp::kAsin:
      return std::asin(x);
    case UnaryOp::kAcos:
      return std::acos(x);
    case UnaryOp::kAtan:
      return std::atan(x);
    case UnaryOp::kSinh:
      return std::sinh(x);
    case UnaryOp::kCosh:
      return std::cosh(x);
    case UnaryOp::kAsinh:
      return std::asinh(x);
    case UnaryOp::kAcosh:
      return std::acosh(x);
    case UnaryOp::kAtanh:
      return std::atanh(x);
    case UnaryOp::kCelu:
      return std::max(x, 0.0) + std::min(0.0, kGamma * std::expm1(x / kGamma));
    case UnaryOp::kShrink: {  // with the parameters as the shader holds them: x + δ cancels
      const double lambd = static_cast<float>(kGamma), bias = static_cast<float>(kDelta);
      return x < -lambd ? x + bias : x > lambd ? x - bias : 0;
    }
    case UnaryOp::kIdentity:
      return x;
    case UnaryOp::kRelu:
      return x > 0 ? x : 0;
    case UnaryOp::kSigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case UnaryOp::kTanh:
      return std::tanh(x);
    // Both GELUs through forms that do not cancel for x ≪ 0: Φ(x) = ½·erfc(−x/√2), and
    // ½(1 + tanh u) = 1 / (1 + e^(−2u)).
    case UnaryOp::kGeluErf:
      return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case UnaryOp::kGeluTanh:
      return x / (1.0 + std::exp(-2.0 * std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case UnaryOp::kExp:
      return std::exp(x);
  }
  return 0;
}

const char* name(UnaryOp op) {
  static const char* kNames[] = {
      "identity", "relu",  "sigmoid", "tanh", "gelu_erf",   "gelu_tanh", "exp",        "erf",      "sqrt",
      "recip",    "abs",   "log",     "pow",  "leaky_relu", "clip",      "hard_swish", "elu",      "softplus",
      "floor",    "ceil",  "sin",     "cos",  "sign",       "round",     "selu",       "softsign", "thresholded_relu",
      "tan",      "asin",  "acos",    "atan", "sinh",       "cosh",      "asinh",      "acosh",    "atanh",
      "celu",     "shrink"};
  return kNames[static_cast<int>(op)];
}

// Runs `op` on `x` (shape [n]) and returns got vs. the float64 reference of the stored inputs.
struct Outcome {
  double worst;
  size_t worst_index;
  float x_at_worst;
};

class UnaryTest : public GpuTest, public ::testing::WithParamInterface<DType> {
 protected:
  Outcome run(UnaryOp op, const std::vector<float>& x, float alpha = 1.0f, float beta = 0.0f) {
    const DType d = GetParam();
    const int64_t n = static_cast<int64_t>(x.size());
    Tensor in = upload_f32(rt(), d, {n}, x);
    Tensor out = poisoned(rt(), d, {n});
    Graph g(rt());
    Status s = ops::unary(g, op, in, out, alpha, beta, static_cast<float>(kGamma), static_cast<float>(kDelta));
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_TRUE(g.run().is_ok());
    auto stored = download_f32(rt(), in), got = download_f32(rt(), out);
    Outcome o{0, 0, 0};
    for (size_t i = 0; i < got.size(); ++i) {
      const double want = reference(op, double(alpha) * stored[i] + double(beta));
      const double err =
          std::isfinite(got[i]) || std::isinf(want) ? std::abs(got[i] - want) / (std::abs(want) + 1e-3) : INFINITY;
      if (!(err <= o.worst)) o = {err, i, stored[i]};
    }
    return o;
  }
  bool f32() const { return GetParam() == DType::kF32; }
};

TEST_P(UnaryTest, EveryOpMatchesFloat64OnRandomData) {
  struct Case {
    UnaryOp op;
    float lo, hi, tol32;
  };
  const Case cases[] = {
      {UnaryOp::kRelu, -3, 3, 1e-7f},
      {UnaryOp::kSigmoid, -12, 12, 2e-6f},
      {UnaryOp::kTanh, -6, 6, 2e-6f},
      {UnaryOp::kGeluErf, -8, 8, 2e-6f},
      {UnaryOp::kGeluTanh, -8, 8, 2e-6f},
      {UnaryOp::kExp, -8, 8, 2e-6f},
      {UnaryOp::kIdentity, -3, 3, 1e-7f},
      {UnaryOp::kErf, -4, 4, 2e-6f},
      {UnaryOp::kSqrt, 0, 9, 1e-6f},
      {UnaryOp::kReciprocal, 0.1f, 5, 1e-6f},
      {UnaryOp::kAbs, -3, 3, 1e-7f},
      {UnaryOp::kLog, 0.01f, 50, 2e-6f},
      {UnaryOp::kPow, 0.01f, 9, 4e-6f},
      {UnaryOp::kLeakyRelu, -3, 3, 1e-7f},
      {UnaryOp::kClip, -3, 3, 1e-7f},
      {UnaryOp::kHardSwish, -5, 5, 1e-6f},
      {UnaryOp::kElu, -5, 5, 2e-6f},
      {UnaryOp::kSoftplus, -15, 15, 2e-6f},
      {UnaryOp::kFloor, -5, 5, 1e-7f},
      {UnaryOp::kCeil, -5, 5, 1e-7f},
      {UnaryOp::kSin, -6, 6, 2e-6f},
      {UnaryOp::kCos, -6, 6, 2e-6f},
      {UnaryOp::kSign, -3, 3, 1e-7f},
      {UnaryOp::kRound, -5, 5, 1e-7f},
      {UnaryOp::kSelu, -5, 5, 2e-6f},
      {UnaryOp::kSoftsign, -5, 5, 1e-6f},
      {UnaryOp::kThresholdedRelu, -3, 3, 1e-7f},
      {UnaryOp::kTan, -1.4f, 1.4f, 4e-6f},
      {UnaryOp::kAsin, -1, 1, 4e-6f},
      {UnaryOp::kAcos, -1, 1, 4e-6f},
      {UnaryOp::kAtan, -20, 20, 4e-6f},
      {UnaryOp::kSinh, -8, 8, 4e-6f},
      {UnaryOp::kCosh, -8, 8, 4e-6f},
      {UnaryOp::kAsinh, -50, 50, 4e-6f},
      {UnaryOp::kAcosh, 1, 50, 4e-6f},
      {UnaryOp::kAtanh, -0.99f, 0.99f, 4e-6f},
      {UnaryOp::kCelu, -5, 5, 2e-6f},
      {UnaryOp::kShrink, -3, 3, 1e-7f},
  };
  uint32_t seed = 100;
  for (const Case& c : cases) {
    auto x = random_floats(3 * 1001 + 5, ++seed, c.lo, c.hi);
    Outcome o = run(c.op, x);
    EXPECT_LE(o.worst, f32() ? c.tol32 : 1e-3) << name(c.op) << " at x = " << o.x_at_worst;
    std::printf("%s %s: max error %.3g (relative to |want| + 1e-3)\n", name(c.op), dtype_name(GetParam()), o.worst);
  }
}

// One 16-byte word per invocation, a partial last word element by element.
TEST_P(UnaryTest, WholeAndPartialLastWordsMatchFloat64) {
  uint32_t seed = 200;
  for (size_t n : {1, 7, 8, 9, 1003}) {
    for (UnaryOp op : {UnaryOp::kGeluErf, UnaryOp::kIdentity}) {
      Outcome o = run(op, random_floats(n, ++seed, -4, 4), 1.25f, 0.5f);
      EXPECT_LE(o.worst, f32() ? 2e-6 : 1e-3) << name(op) << " n = " << n << " at x = " << o.x_at_worst;
    }
  }
}

// A 1000-byte limit makes chunks of 186 floats / 372 halves: windows that start inside a word
// take the element path.
TEST_P(UnaryTest, ChunksStartingInsideAWordStayCorrect) {
  struct Limit {
    Limit() { ops::set_max_binding_bytes_for_testing(1000); }
    ~Limit() { ops::set_max_binding_bytes_for_testing(0); }
  } limit;
  Outcome o = run(UnaryOp::kTanh, random_floats(2001, 9, -3, 3));
  EXPECT_LE(o.worst, f32() ? 2e-6 : 1e-3) << "at x = " << o.x_at_worst;
}

TEST_P(UnaryTest, ScaleShiftAppliesBeforeTheFunction) {
  auto x = random_floats(777, 7, -2, 2);
  Outcome o = run(UnaryOp::kIdentity, x, 2.5f, -0.75f);
  EXPECT_LE(o.worst, f32() ? 1e-7 : 1e-3);
  o = run(UnaryOp::kExp, x, -1.5f, 0.25f);  // exp(−1.5x + 0.25)
  EXPECT_LE(o.worst, f32() ? 2e-6 : 1e-3);
}

TEST_P(UnaryTest, ExtremeInputsStayFiniteAndSaturate) {
  std::vector<float> x{-100, -50, -20, -10, -1e-4f, -1e-7f, 0, 1e-7f, 1e-4f, 10, 20, 50, 100};
  if (!f32()) x = {-60000, -100, -20, -10, -1e-4f, 0, 1e-4f, 10, 20, 100, 60000};
  for (UnaryOp op : {UnaryOp::kRelu, UnaryOp::kSigmoid, UnaryOp::kTanh, UnaryOp::kGeluErf, UnaryOp::kGeluTanh}) {
    Outcome o = run(op, x);
    EXPECT_LE(o.worst, f32() ? 2e-6 : 1e-3) << name(op) << " at x = " << o.x_at_worst;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, UnaryTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class UnaryAccuracyTest : public GpuTest {};

// GELU (erf) on a dense grid: the absolute error against float64 must stay near fp32 rounding, and
// the relative error in both tails small (Φ is computed from erfc, not 1 + erf).
TEST_F(UnaryAccuracyTest, GeluErfIsAccurateAcrossTheRange) {
  const int n = 200001;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = -10.0f + 20.0f * static_cast<float>(i) / (n - 1);
  Tensor in = upload_f32(rt(), DType::kF32, {n}, x);
  Tensor out = poisoned(rt(), DType::kF32, {n});
  Graph g(rt());
  ASSERT_TRUE(ops::gelu(g, in, out).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  auto got = download_f32(rt(), out);
  // abs: relative to max(|x|, 1), the scale of GELU's own rounding; rel: relative to |GELU(x)|,
  // over the core |x| ≤ 5 and over the whole range (x ≈ −10 gives GELU ≈ −8e−23).
  double worst_abs = 0, worst_rel_core = 0, worst_rel = 0;
  for (int i = 0; i < n; ++i) {
    const double want = reference(UnaryOp::kGeluErf, x[i]);
    const double err = std::abs(got[i] - want);
    worst_abs = std::max(worst_abs, err / std::max(1.0, std::abs(double(x[i]))));
    if (want == 0) continue;
    worst_rel = std::max(worst_rel, err / std::abs(want));
    if (std::abs(x[i]) <= 5) worst_rel_core = std::max(worst_rel_core, err / std::abs(want));
  }
  EXPECT_LE(worst_abs, 3e-7);
  EXPECT_LE(worst_rel_core, 2e-6);
  EXPECT_LE(worst_rel, 1e-5);
  std::printf("gelu_erf over [-10, 10]: max abs error per max(|x|,1) %.3g; max relative %.3g (|x| <= 5), %.3g (all)\n",
              worst_abs, worst_rel_core, worst_rel);
}

TEST_F(UnaryAccuracyTest, InPlaceOverwritesTheInput) {
  auto x = random_floats(513, 9, -4, 4);
  Tensor t = upload_f32(rt(), DType::kF32, {513}, x);
  Graph g(rt());
  ASSERT_TRUE(ops::tanh_activation(g, t, t).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  auto got = download_f32(rt(), t);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(got[i], std::tanh(double(x[i])), 2e-7) << i;
}

TEST_F(UnaryAccuracyTest, TensorsLargerThanOneBindingAreSplit) {
  const int64_t n = (int64_t{1} << 25) + 4099;  // 128 MiB + 16 KiB of f32
  std::vector<float> x = random_floats(n, 11, -1, 1);
  Tensor in = upload_f32(rt(), DType::kF32, {n}, x);
  Tensor out = poisoned(rt(), DType::kF32, {n});
  Graph g(rt());
  ASSERT_TRUE(ops::relu(g, in, out).is_ok());
  // Two windows where one binding holds less than the tensor (lavapipe's 128 MiB), else one.
  const bool splits = in.bytes() > ops::max_binding_bytes();
  EXPECT_EQ(g.dispatch_count(), splits ? 2u : 1u);
  ASSERT_TRUE(g.run().is_ok());
  auto got = download_f32(rt(), out);
  for (int64_t i = 0; i < n; ++i) {
    if (got[i] != std::max(x[i], 0.0f)) FAIL() << "element " << i << ": " << got[i] << " for x = " << x[i];
  }
}

TEST_F(UnaryAccuracyTest, MisuseIsRefused) {
  auto t = [&](DType d, const Shape& s) { return Tensor::empty(rt(), d, s).value(); };
  Graph g(rt());
  EXPECT_EQ(ops::relu(g, t(DType::kF32, {4}), t(DType::kF32, {5})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::relu(g, t(DType::kF32, {4}), t(DType::kF32, {2, 2})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::gelu(g, t(DType::kF32, {4}), t(DType::kF16, {4})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::sigmoid(g, t(DType::kI32, {4}), t(DType::kI32, {4})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::unary(g, static_cast<UnaryOp>(42), t(DType::kF32, {4}), t(DType::kF32, {4})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
