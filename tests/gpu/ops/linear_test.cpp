// linear (nn.Linear + fused epilogue) against float64 CPU references computed from the stored
// inputs: 3-D token tensors, every activation, bias or none, residual (also in place), a weight
// beyond maxStorageBufferRange (split over its rows), the tensor-core path where present, misuse.
#include "gpu/ops/linear.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/ops/activation_reference.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT
using ops::Activation;
using ops::GemmPath;

// x·w + bias over k terms in float64, and Σ|terms| as the scale of the error bound (linear.h).
struct RefDot {
  double sum, scale;
};
RefDot ref_dot(const float* x, const float* w, int64_t k, double bias) {
  RefDot d{bias, std::abs(bias)};
  for (int64_t q = 0; q < k; ++q) {
    const double t = double(x[q]) * w[q];
    d.sum += t;
    d.scale += std::abs(t);
  }
  return d;
}

// A [rows, cols] matrix stored [cols, rows] (nn.Linear's [N, K] weight as WeightLayout::kInOut, and back).
std::vector<float> transposed(const std::vector<float>& m, int64_t rows, int64_t cols) {
  std::vector<float> t(m.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = m[r * cols + c];
  }
  return t;
}

// GpuTest shares one Runtime per process (validation on), so pipelines (about a second each to
// create on lavapipe) are built once; each test still fails on any validation message it caused.
class LinearTest : public recon::gpu::testing::GpuTest {
 protected:
  // out = act(x·wᵀ + bias) + residual on x [lead..., K], w [N, K]; error bound as in linear.h.
  // With kInOut the same weights are uploaded transposed, [K, N].
  void check(DType d, const Shape& x_shape, int64_t n, bool bias, Activation act, int residual_mode, GemmPath path,
             uint32_t seed, const Capabilities* caps_override = nullptr,
             ops::WeightLayout layout = ops::WeightLayout::kOutIn) {
    const bool in_out = layout == ops::WeightLayout::kInOut;
    SCOPED_TRACE(std::string(dtype_name(d)) + " x" + shape_string(x_shape) + " N=" + std::to_string(n) +
                 " act=" + ops::activation_name(act) + " bias=" + std::to_string(bias) +
                 " residual=" + std::to_string(residual_mode) + (in_out ? " weight [K,N]" : ""));
    const int64_t k = x_shape.back(), m = shape_numel(x_shape) / k;
    Shape out_shape = x_shape;
    out_shape.back() = n;
    Tensor x = upload_f32(rt(), d, x_shape, random_floats(m * k, seed));
    Tensor w = upload_f32(rt(), d, {n, k}, random_floats(n * k, seed + 1, -0.5f, 0.5f));
    // residual_mode: 0 none, 1 separate tensor, 2 the output itself (in-place x + f(x)).
    Tensor out = residual_mode == 2 ? upload_f32(rt(), d, out_shape, random_floats(m * n, seed + 2))
                                    : poisoned(rt(), d, out_shape);
    std::optional<Tensor> tb, tr;
    if (bias) tb = upload_f32(rt(), d, {n}, random_floats(n, seed + 3));
    if (residual_mode == 1) tr = upload_f32(rt(), d, out_shape, random_floats(m * n, seed + 4));
    if (residual_mode == 2) tr = out;
    const auto hx = download_f32(rt(), x), hw = download_f32(rt(), w);
    if (in_out) w = upload_f32(rt(), d, {k, n}, transposed(hw, n, k));
    const auto hb = tb ? download_f32(rt(), *tb) : std::vector<float>();
    const auto hr = tr ? download_f32(rt(), *tr) : std::vector<float>();

    ops::Epilogue ep;
    ep.activation = act;
    if (tr) ep.residual = *tr;
    std::optional<Arg> bias_arg;
    if (tb) bias_arg = *tb;
    Graph g(rt());
    Status s = ops::linear(g, caps_override ? *caps_override : rt().caps(), x, w, bias_arg, out, ep, path, layout);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_TRUE(g.run().is_ok());
    dispatches_ = g.dispatch_count();
    const auto got = download_f32(rt(), out);
    double worst = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        auto [sum, scale] = ref_dot(&hx[i * k], &hw[j * k], k, bias ? hb[j] : 0.0);
        double want = activation_reference(sum, act);
        if (tr) want += hr[i * n + j], scale += std::abs(hr[i * n + j]);
        const float v = got[i * n + j];
        ASSERT_TRUE(std::isfinite(v)) << "element " << i << "," << j << " unwritten";
        worst = std::max(worst, std::abs(v - want) / (scale + std::abs(want) + 1e-6));
      }
    }
    EXPECT_LE(worst, d == DType::kF32 ? 1e-5 : 2e-3);
  }

  // out = rope(x·wᵀ + bias) on x [B, h·w, K]: the first `heads` heads of `head_dim` columns rotate
  // (rope2d.h's formula, float64); the other columns are the plain linear output.
  void check_rope(DType d, int64_t batch, ops::RopeGrid grid, int64_t k, int64_t n, int64_t heads, int64_t head_dim,
                  GemmPath path, uint32_t seed, ops::WeightLayout layout = ops::WeightLayout::kOutIn) {
    const int64_t tokens = grid.h * grid.w, m = batch * tokens, q4 = head_dim / 4;
    SCOPED_TRACE(std::string(dtype_name(d)) + " B=" + std::to_string(batch) + " grid " + std::to_string(grid.h) + "x" +
                 std::to_string(grid.w) + " K=" + std::to_string(k) + " N=" + std::to_string(n) + " rope " +
                 std::to_string(heads) + "x" + std::to_string(head_dim));
    const auto hx = random_floats(m * k, seed), hw = random_floats(n * k, seed + 1, -0.5f, 0.5f);
    const auto hb = random_floats(n, seed + 2);
    const bool in_out = layout == ops::WeightLayout::kInOut;
    Tensor x = upload_f32(rt(), d, {batch, tokens, k}, hx);
    Tensor w = in_out ? upload_f32(rt(), d, {k, n}, transposed(hw, n, k)) : upload_f32(rt(), d, {n, k}, hw);
    Tensor b = upload_f32(rt(), d, {n}, hb);
    Tensor out = poisoned(rt(), d, {batch, tokens, n});
    // The reference reads what the device read (fp16 rounding of the inputs included), as [N, K].
    const auto rx = download_f32(rt(), x), rb = download_f32(rt(), b);
    const auto rw = in_out ? transposed(download_f32(rt(), w), k, n) : download_f32(rt(), w);
    ops::Epilogue ep;
    ep.rope = ops::RopeEpilogue{grid, heads, head_dim};
    Graph g(rt());
    Status s = ops::linear(g, rt().caps(), x, w, Arg(b), out, ep, path, layout);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_TRUE(g.run().is_ok());
    dispatches_ = g.dispatch_count();
    const auto got = download_f32(rt(), out);
    std::vector<double> lin(n), scale(n);
    double worst = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const RefDot d = ref_dot(&rx[i * k], &rw[j * k], k, rb[j]);
        lin[j] = d.sum, scale[j] = d.scale;
      }
      const int64_t token = i % tokens;
      for (int64_t j = 0; j < n; ++j) {
        double want = lin[j], sc = scale[j];
        const int64_t hc = j % head_dim;
        if (j < heads * head_dim) {
          const double pos = hc < head_dim / 2 ? double(token / grid.w) : double(token % grid.w);
          const int64_t jj = hc % q4;
          const bool first = hc % (head_dim / 2) < q4;
          const double theta = pos / std::pow(double(ops::kRopeBase), double(jj) / double(q4));
          const int64_t partner = first ? j + q4 : j - q4;
          want = first ? lin[j] * std::cos(theta) - lin[partner] * std::sin(theta)
                       : lin[j] * std::cos(theta) + lin[partner] * std::sin(theta);
          sc = scale[j] + scale[partner];
        }
        const float v = got[i * n + j];
        ASSERT_TRUE(std::isfinite(v)) << "element " << i << "," << j << " unwritten";
        worst = std::max(worst, std::abs(v - want) / (sc + 1e-6));
      }
    }
    EXPECT_LE(worst, d == DType::kF32 ? 1e-5 : 2e-3);
  }

  size_t dispatches_ = 0;
};

class LinearDtypeTest : public LinearTest, public ::testing::WithParamInterface<DType> {};

TEST_P(LinearDtypeTest, MatchesFloat64WithEveryEpilogue) {
  const DType d = GetParam();
  uint32_t seed = 10;
  for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kGeluErf, Activation::kGeluTanh,
                         Activation::kSigmoid, Activation::kTanh}) {
    check(d, {2, 37, 70}, 45, true, act, 1, GemmPath::kScalar, seed += 10);
  }
  check(d, {53, 19}, 130, false, Activation::kNone, 0, GemmPath::kScalar, 200);     // no bias, 2-D
  check(d, {1, 3, 96}, 80, true, Activation::kGeluErf, 2, GemmPath::kScalar, 210);  // in-place residual
  check(d, {70}, 33, true, Activation::kRelu, 0, GemmPath::kAuto, 220);             // one token, 1-D x
  check(d, {2, 37, 70}, 45, true, Activation::kGeluErf, 1, GemmPath::kScalar, 230, nullptr, ops::WeightLayout::kInOut);
  check(d, {1, 3, 96}, 80, true, Activation::kNone, 2, GemmPath::kAuto, 240, nullptr, ops::WeightLayout::kInOut);
}

TEST_P(LinearDtypeTest, RopeEpilogueRotatesTheFirstHeads) {
  // Off the tensor cores the op records rope2d after the GEMM; q and k of a packed qkv, then a
  // lone q with a head dim other than 64.
  const DType d = GetParam();
  check_rope(d, 2, {3, 5}, 40, 3 * 64, 2, 64, GemmPath::kScalar, 600);
  EXPECT_EQ(dispatches_, 2u);
  check_rope(d, 1, {4, 3}, 24, 2 * 32, 2, 32, GemmPath::kAuto, 610, ops::WeightLayout::kInOut);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LinearDtypeTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

TEST_F(LinearTest, WeightBeyondTheBindingLimitIsSplitOverItsRows) {
  // The 6400×7168 fp32 head MLP weight (175 MiB) exceeds lavapipe's 128 MiB binding range. Here a
  // 8200×4100 fp32 weight (134.5 MB) on the real device, and a shrunken limit for f16.
  const int64_t n = 8200, k = 4100, m = 3;
  if (static_cast<VkDeviceSize>(n * k * 4) <= rt().caps().max_storage_buffer_range) {
    GTEST_SKIP() << "the device binds " << rt().caps().max_storage_buffer_range << " bytes: nothing to split";
  }
  std::vector<float> wv(n * k);
  uint32_t state = 12345;  // a cheap generator for 33.6 M values
  for (float& v : wv) {
    state = state * 1664525u + 1013904223u;
    v = float(int32_t(state >> 8) - (1 << 23)) / float(1 << 24);
  }
  Tensor w = upload_f32(rt(), DType::kF32, {n, k}, wv);
  const auto hx = random_floats(m * k, 5);
  Tensor x = upload_f32(rt(), DType::kF32, {m, k}, hx);
  const auto hb = random_floats(n, 6);
  Tensor b = upload_f32(rt(), DType::kF32, {n}, hb);
  Tensor out = poisoned(rt(), DType::kF32, {m, n});
  Graph g(rt());
  ops::Epilogue ep;
  ep.activation = Activation::kGeluErf;
  ASSERT_TRUE(ops::linear(g, rt().caps(), x, w, b, out, ep).is_ok());
  EXPECT_GE(g.dispatch_count(), 2u);
  ASSERT_TRUE(g.run().is_ok());
  const auto got = download_f32(rt(), out);
  double worst = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const auto [sum, scale] = ref_dot(&hx[i * k], &wv[j * k], k, hb[j]);
      const double want = activation_reference(sum, Activation::kGeluErf);
      ASSERT_TRUE(std::isfinite(got[i * n + j])) << "element " << i << "," << j << " unwritten";
      worst = std::max(worst, std::abs(got[i * n + j] - want) / (scale + std::abs(want) + 1e-6));
    }
  }
  EXPECT_LE(worst, 1e-5);
}

TEST_F(LinearTest, ShrunkenBindingLimitSplitsWeightsAndTokens) {
  Capabilities caps = rt().caps();
  caps.max_storage_buffer_range = 8192;
  check(DType::kF16, {2, 40, 48}, 150, true, Activation::kTanh, 1, GemmPath::kScalar, 300, &caps);
  EXPECT_GT(dispatches_, 2u);
}

TEST_F(LinearTest, MisuseIsInvalidArgument) {
  auto t = [&](DType d, Shape s) { return Tensor::empty(rt(), d, s).value(); };
  const Capabilities& caps = rt().caps();
  Graph g(rt());
  Tensor x = t(DType::kF32, {2, 5, 8}), w = t(DType::kF32, {6, 8}), out = t(DType::kF32, {2, 5, 6});
  EXPECT_TRUE(ops::linear(g, caps, x, w, std::nullopt, out).is_ok());
  const size_t ok = g.dispatch_count();
  EXPECT_EQ(ops::linear(g, caps, x, t(DType::kF32, {6, 7}), std::nullopt, out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::linear(g, caps, x, w, std::nullopt, t(DType::kF32, {2, 5, 7})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::linear(g, caps, x, w, std::nullopt, t(DType::kF32, {10, 6})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::linear(g, caps, x, w, Arg(t(DType::kF32, {5})), out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::linear(g, caps, x, t(DType::kF16, {6, 8}), std::nullopt, out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::linear(g, caps, x, t(DType::kF32, {6, 8, 1}), std::nullopt, out).code(), StatusCode::kInvalidArgument);
  ops::Epilogue bad_res;
  bad_res.residual = t(DType::kF32, {2, 6, 5});
  EXPECT_EQ(ops::linear(g, caps, x, w, std::nullopt, out, bad_res).code(), StatusCode::kInvalidArgument);
  Tensor sq = t(DType::kF32, {4, 6});  // out aliasing x
  EXPECT_EQ(ops::linear(g, caps, sq, t(DType::kF32, {6, 6}), std::nullopt, sq).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), ok);
  // RoPE: not with an activation; the grid must hold the rows' tokens; the heads must fit N.
  Tensor wr = t(DType::kF32, {8, 8}), outr = t(DType::kF32, {2, 5, 8});
  ops::Epilogue rope;
  rope.rope = ops::RopeEpilogue{{1, 5}, 2, 4};
  EXPECT_TRUE(ops::linear(g, caps, x, wr, std::nullopt, outr, rope).is_ok());
  const size_t with_rope = g.dispatch_count();
  ops::Epilogue rope_act = rope;
  rope_act.activation = Activation::kRelu;
  EXPECT_EQ(ops::linear(g, caps, x, wr, std::nullopt, outr, rope_act).code(), StatusCode::kInvalidArgument);
  ops::Epilogue rope_grid = rope;
  rope_grid.rope->grid = {2, 3};
  EXPECT_EQ(ops::linear(g, caps, x, wr, std::nullopt, outr, rope_grid).code(), StatusCode::kInvalidArgument);
  ops::Epilogue rope_heads = rope;
  rope_heads.rope->heads = 3;
  EXPECT_EQ(ops::linear(g, caps, x, wr, std::nullopt, outr, rope_heads).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), with_rope);
  EXPECT_GT(with_rope, ok);
}

TEST_F(LinearTest, TensorCorePathMatchesFloat64) {
  if (!ops::coopmat_gemm_available(rt().caps())) {
    GTEST_SKIP() << "device has no VK_NV_cooperative_matrix 16x16x16 f16->f32 (lavapipe never does)";
  }
  // fp16 storage, and fp32 split into two fp16 parts (shaders/gemm_io.glsl).
  for (const DType dt : {DType::kF16, DType::kF32}) {
    SCOPED_TRACE(dtype_name(dt));
    uint32_t seed = 400;
    for (Activation act : {Activation::kNone, Activation::kGeluErf, Activation::kRelu}) {
      check(dt, {3, 50, 64}, 96, true, act, 1, GemmPath::kCoopMat, seed += 10);  // 16-byte loads
    }
    check(dt, {2, 33, 70}, 45, true, Activation::kTanh, 2, GemmPath::kCoopMat, 450);       // scalar loads
    check(dt, {256, 1024}, 3072, true, Activation::kGeluErf, 0, GemmPath::kCoopMat, 460);  // ViT-L fc1
    // Weights uploaded [K, N]: 64×64 tiles, then 128×128 with BK = 16 (K ≤ 768), BK = 16 with one
    // register set (≥ 512 tiles) and BK = 32.
    const auto in_out = ops::WeightLayout::kInOut;
    check(dt, {2, 33, 72}, 48, true, Activation::kTanh, 2, GemmPath::kCoopMat, 470, nullptr, in_out);
    check(dt, {1100, 760}, 1000, true, Activation::kGeluErf, 1, GemmPath::kCoopMat, 480, nullptr, in_out);
    check(dt, {2900, 200}, 3000, true, Activation::kRelu, 1, GemmPath::kCoopMat, 485, nullptr, in_out);
    check(dt, {1030, 1100}, 1030, true, Activation::kNone, 2, GemmPath::kCoopMat, 490, nullptr, in_out);
  }
}

TEST_F(LinearTest, TensorCoreRopeEpilogueMatchesFloat64) {
  if (!ops::coopmat_gemm_available(rt().caps())) {
    GTEST_SKIP() << "device has no VK_NV_cooperative_matrix 16x16x16 f16->f32 (lavapipe never does)";
  }
  // fp16 storage, and fp32 split into two fp16 parts (shaders/gemm_io.glsl).
  for (const DType dt : {DType::kF16, DType::kF32}) {
    SCOPED_TRACE(dtype_name(dt));
    // Rotated in the GEMM epilogue (one dispatch): 64×64 tiles with ragged rows, a row width that
    // rules out 16-byte stores, then 128×128 tiles with BK = 16 and BK = 32 in both weight layouts.
    const auto in_out = ops::WeightLayout::kInOut;
    check_rope(dt, 2, {5, 7}, 72, 3 * 64, 2, 64, GemmPath::kCoopMat, 700);
    EXPECT_EQ(dispatches_, 1u);
    check_rope(dt, 1, {6, 6}, 64, 200, 3, 64, GemmPath::kCoopMat, 710);
    EXPECT_EQ(dispatches_, 1u);
    check_rope(dt, 2, {24, 32}, 768, 3 * 512, 16, 64, GemmPath::kCoopMat, 720, in_out);
    EXPECT_EQ(dispatches_, 1u);
    check_rope(dt, 2, {24, 32}, 1024, 1024, 16, 64, GemmPath::kCoopMat, 730, in_out);
    check_rope(dt, 2, {24, 32}, 1024, 1024, 16, 64, GemmPath::kCoopMat, 740);
    check_rope(dt, 1, {64, 48}, 64, 3072, 16, 64, GemmPath::kCoopMat, 750, in_out);  // 576 tiles
  }
}

}  // namespace
}  // namespace recon::gpu
