// matmul / matmul_strided against float64 CPU references computed from the stored inputs: ragged
// shapes on every scalar tile, all four transpose combinations, alpha/beta, bias per column and
// per row, every activation, residual (also in place), batches with broadcast operands, strided
// views, splitting of operands beyond maxStorageBufferRange (with a shrunken limit), activation
// accuracy over [-12, 12], the tensor-core path where the device has it, and misuse.
#include "gpu/ops/matmul.h"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/ops/activation_reference.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT
using ops::Activation;
using ops::GemmPath;

constexpr Activation kAllActivations[] = {Activation::kNone,     Activation::kRelu,    Activation::kGeluErf,
                                          Activation::kGeluTanh, Activation::kSigmoid, Activation::kTanh};

// One problem: C[b] = act(alpha·op(A[b])·op(B[b]) + beta·C[b] + bias) + R[b] on dense operands.
struct Problem {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool ta = false, tb = false;
  bool batched_a = false, batched_b = false, batched_c = false;
  float alpha = 1, beta = 0;
  bool bias = false, bias_per_row = false, residual = false, residual_in_place = false;
  Activation act = Activation::kNone;
  GemmPath path = GemmPath::kScalar;
  float scale_a = 1, scale_b = 1;  // A's and B's random values are in [−scale, scale]

  std::string str() const {
    return std::to_string(batch) + "x" + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
           (ta ? " ta" : "") + (tb ? " tb" : "") + " act=" + ops::activation_name(act) + (bias ? " bias" : "") +
           (residual ? " res" : "") + " alpha=" + std::to_string(alpha) + " beta=" + std::to_string(beta);
  }
};

// GpuTest shares one Runtime per process (validation on), so pipelines (about a second each to
// create on lavapipe) are built once; each test still fails on any validation message it caused.
using SharedRuntimeTest = recon::gpu::testing::GpuTest;

class MatmulTest : public SharedRuntimeTest {
 protected:
  // Runs `p` (optionally under reduced caps) and checks every element against float64:
  // |got − want| ≤ tol·(|alpha|·Σ|a·b| + |beta·c| + |bias| + |r| + |want| + 1e-6).
  void run(const Problem& p, DType d, uint32_t seed, const Capabilities* caps_override = nullptr,
           size_t* dispatches = nullptr, uint64_t* scratch_bytes = nullptr) {
    SCOPED_TRACE(p.str() + " " + dtype_name(d));
    const int64_t ab = p.batched_a ? p.batch : 1, bb = p.batched_b ? p.batch : 1, cb = p.batched_c ? p.batch : 1;
    const Shape sa = p.ta ? Shape{p.k, p.m} : Shape{p.m, p.k};
    const Shape sb = p.tb ? Shape{p.n, p.k} : Shape{p.k, p.n};
    auto with_batch = [](Shape s, bool batched, int64_t b) {
      if (batched) s.insert(s.begin(), b);
      return s;
    };
    const Shape shape_a = with_batch(sa, p.batched_a, p.batch), shape_b = with_batch(sb, p.batched_b, p.batch);
    const Shape shape_c = with_batch({p.m, p.n}, p.batched_c, p.batch);
    auto scaled = [](std::vector<float> v, float scale) {
      for (float& x : v) x *= scale;
      return v;
    };
    Tensor ta = upload_f32(rt(), d, shape_a, scaled(random_floats(ab * p.m * p.k, seed), p.scale_a));
    Tensor tb = upload_f32(rt(), d, shape_b, scaled(random_floats(bb * p.k * p.n, seed + 1), p.scale_b));
    const bool c_initialised = p.beta != 0 || p.residual_in_place;
    Tensor tc = c_initialised ? upload_f32(rt(), d, shape_c, random_floats(cb * p.m * p.n, seed + 2))
                              : poisoned(rt(), d, shape_c);
    std::optional<Tensor> tbias, tres;
    ops::MatmulOptions opt;
    opt.transpose_a = p.ta;
    opt.transpose_b = p.tb;
    opt.alpha = p.alpha;
    opt.beta = p.beta;
    opt.path = p.path;
    opt.epilogue.activation = p.act;
    if (p.bias) {
      tbias = upload_f32(rt(), d, {p.bias_per_row ? p.m : p.n}, random_floats(p.bias_per_row ? p.m : p.n, seed + 3));
      opt.bias = *tbias;
      opt.bias_per_row = p.bias_per_row;
    }
    if (p.residual) {
      tres = p.residual_in_place ? tc : upload_f32(rt(), d, shape_c, random_floats(cb * p.m * p.n, seed + 4));
      opt.epilogue.residual = *tres;
    }
    // Host copies of what is stored (fp16-rounded for f16), taken before the run.
    const auto ha = download_f32(rt(), ta), hb = download_f32(rt(), tb);
    const auto hc0 = c_initialised ? download_f32(rt(), tc) : std::vector<float>();
    const auto hbias = tbias ? download_f32(rt(), *tbias) : std::vector<float>();
    const auto hres = tres ? download_f32(rt(), *tres) : std::vector<float>();

    Graph g(rt());
    const Capabilities& caps = caps_override ? *caps_override : rt().caps();
    Status s = ops::matmul(g, caps, ta, tb, tc, opt);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    if (dispatches) *dispatches = g.dispatch_count();
    if (scratch_bytes) *scratch_bytes = g.scratch_bytes();
    Status r = g.run();
    ASSERT_TRUE(r.is_ok()) << r.to_string();
    const auto got = download_f32(rt(), tc);

    double worst = 0;
    for (int64_t b = 0; b < cb; ++b) {
      const float* A = ha.data() + (p.batched_a ? b * p.m * p.k : 0);
      const float* B = hb.data() + (p.batched_b ? b * p.k * p.n : 0);
      for (int64_t i = 0; i < p.m; ++i) {
        for (int64_t j = 0; j < p.n; ++j) {
          double sum = 0, scale = 0;
          for (int64_t q = 0; q < p.k; ++q) {
            const double x = A[p.ta ? q * p.m + i : i * p.k + q], y = B[p.tb ? j * p.k + q : q * p.n + j];
            sum += x * y;
            scale += std::abs(x * y);
          }
          const int64_t ci = (b * p.m + i) * p.n + j;
          double v = p.alpha * sum;
          scale *= std::abs(p.alpha);
          if (p.beta != 0) {
            v += p.beta * double(hc0[ci]);
            scale += std::abs(p.beta * hc0[ci]);
          }
          if (p.bias) {
            const double bv = hbias[p.bias_per_row ? i : j];
            v += bv;
            scale += std::abs(bv);
          }
          v = activation_reference(v, p.act);
          if (p.residual) {
            v += hres[ci];
            scale += std::abs(hres[ci]);
          }
          ASSERT_TRUE(std::isfinite(got[ci])) << "element " << b << "," << i << "," << j << " unwritten";
          worst = std::max(worst, std::abs(got[ci] - v) / (scale + std::abs(v) + 1e-6));
        }
      }
    }
    EXPECT_LE(worst, d == DType::kF32 ? 1e-5 : 2e-3);
  }
};

class MatmulDtypeTest : public MatmulTest, public ::testing::WithParamInterface<DType> {};

TEST_P(MatmulDtypeTest, RaggedShapesOnEveryScalarTileWithAllTransposes) {
  const DType d = GetParam();
  struct Case {
    int64_t m, n, k;
  };
  // 64×64 tiles, a single element, the 16×128 (small M) and 128×16 (small N) tiles.
  uint32_t seed = 10;
  for (Case c : {Case{1, 1, 1}, Case{67, 70, 45}, Case{5, 200, 37}, Case{150, 7, 20}}) {
    for (int t = 0; t < 4; ++t) {
      Problem p;
      p.m = c.m, p.n = c.n, p.k = c.k, p.ta = t & 1, p.tb = t & 2;
      run(p, d, seed += 10);
    }
  }
}

TEST_F(MatmulTest, LargeTileCoversRaggedEdges) {
  // ≥ 256 tiles of 128×128 select the 8×8 micro-tile; K spans two BK slices. (f32 only: the f16
  // variant differs in load/store conversions, which the other tiles cover, and lavapipe is slow.)
  Problem p;
  p.m = 1940, p.n = 1930, p.k = 17, p.tb = true, p.bias = true, p.act = Activation::kGeluErf;
  run(p, DType::kF32, 77);
  // The same tile moving 4 elements at a time (every dimension a multiple of 4), with a residual.
  Problem aligned;
  aligned.m = 2052, aligned.n = 2044, aligned.k = 20, aligned.tb = true, aligned.residual = true;
  run(aligned, DType::kF32, 78);
}

TEST_P(MatmulDtypeTest, AlphaBetaBiasResidualAndEveryActivation) {
  const DType d = GetParam();
  uint32_t seed = 300;
  for (Activation act : kAllActivations) {
    Problem p;
    p.m = 33, p.n = 29, p.k = 47, p.alpha = 0.75f, p.beta = -0.5f, p.bias = true, p.residual = true, p.act = act;
    run(p, d, seed += 10);
  }
  Problem row_bias;
  row_bias.m = 20, row_bias.n = 70, row_bias.k = 9, row_bias.bias = true, row_bias.bias_per_row = true;
  row_bias.act = Activation::kRelu;
  run(row_bias, d, 400);
  Problem in_place;  // C = gelu(A·B + bias) + C, the residual read from the output itself
  in_place.m = 19, in_place.n = 66, in_place.k = 30, in_place.bias = true, in_place.residual = true;
  in_place.residual_in_place = true, in_place.act = Activation::kGeluErf;
  run(in_place, d, 410);
}

TEST_P(MatmulDtypeTest, BatchesWithBroadcastOperands) {
  const DType d = GetParam();
  Problem p;
  p.batch = 3, p.m = 21, p.n = 35, p.k = 18, p.batched_a = true, p.batched_b = true, p.batched_c = true;
  p.ta = true, p.bias = true, p.residual = true, p.act = Activation::kTanh, p.beta = 1.0f;
  run(p, d, 500);
  p.batched_b = false, p.ta = false, p.tb = true;  // shared weights
  run(p, d, 510);
  p.batched_a = false, p.batched_b = true;  // shared left operand
  run(p, d, 520);
}

TEST_P(MatmulDtypeTest, AlignedOperandsMoveFourElementsAtATime) {
  // Multiples of 4 along every direction: the scalar core's 4-wide loads of A and B along each of
  // their directions (the transposes) and its 4-wide epilogue, on ragged 64×64 tiles.
  const DType d = GetParam();
  uint32_t seed = 600;
  for (int t = 0; t < 4; ++t) {
    Problem p;
    p.m = 68, p.n = 72, p.k = 44, p.ta = t & 1, p.tb = t & 2;
    p.alpha = 0.5f, p.beta = 0.25f, p.bias = true, p.residual = true, p.act = Activation::kGeluErf;
    run(p, d, seed += 10);
  }
  Problem in_place;  // the residual read 4 rows ahead of the stores, from the output itself
  in_place.m = 36, in_place.n = 20, in_place.k = 8, in_place.bias = true, in_place.bias_per_row = true;
  in_place.residual = true, in_place.residual_in_place = true, in_place.act = Activation::kSigmoid;
  run(in_place, d, 700);
  Problem batched;
  batched.batch = 3, batched.m = 24, batched.n = 28, batched.k = 12, batched.batched_a = true;
  batched.batched_c = true, batched.tb = true, batched.residual = true;
  run(batched, d, 710);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, MatmulDtypeTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

TEST_F(MatmulTest, ActivationsAreAccurateOverTheirWholeRange) {
  // K = 1 and B = 1 make C = act(x) with x exactly as stored: the epilogue math alone.
  const int64_t m = 4801;
  std::vector<float> x(m);
  for (int64_t i = 0; i < m; ++i) x[i] = -12.0f + 24.0f * float(i) / float(m - 1);
  x[m / 2] = 0.0f;
  Tensor ta = upload_f32(rt(), DType::kF32, {m, 1}, x);
  Tensor tb = upload_f32(rt(), DType::kF32, {1, 1}, {1.0f});
  for (Activation act : kAllActivations) {
    Tensor tc = poisoned(rt(), DType::kF32, {m, 1});
    Graph g(rt());
    ops::MatmulOptions opt;
    opt.epilogue.activation = act;
    ASSERT_TRUE(ops::matmul(g, rt().caps(), ta, tb, tc, opt).is_ok());
    ASSERT_TRUE(g.run().is_ok());
    const auto got = download_f32(rt(), tc);
    double worst = 0;
    double worst_x = 0;
    for (int64_t i = 0; i < m; ++i) {
      const double want = activation_reference(x[i], act);
      const double err = std::abs(got[i] - want) / (std::abs(want) + 1e-30);
      if (err > worst) worst = err, worst_x = x[i];
    }
    // GELU-tanh evaluates its cubic argument y in fp32: e^{2y} then carries ~|2y|·6e-8 relative
    // error in the far negative tail; the others stay at the fp32 output rounding plus ~1e-6.
    const double tol = act == Activation::kGeluTanh ? 1e-5 : 1.5e-6;
    std::printf("%-9s max relative error %.3g (at x = %g)\n", ops::activation_name(act), worst, worst_x);
    EXPECT_LE(worst, tol) << ops::activation_name(act) << " worst at x = " << worst_x;
  }
}

TEST_F(MatmulTest, StridedViewsReadHeadsInPlace) {
  // Per-"head" products out of a packed [T, 3·H·D] tensor: q_h · k_hᵀ with column offsets and
  // leading dimensions, batch = heads with stride D; output [H, T, T].
  const int64_t t = 13, h = 3, dh = 8, row = 3 * h * dh;
  const auto qkv_h = random_floats(t * row, 900);
  Tensor qkv = upload_f32(rt(), DType::kF32, {t, row}, qkv_h);
  Tensor out = poisoned(rt(), DType::kF32, {h, t, t});
  ops::MatmulGeometry geo;
  geo.m = t, geo.n = t, geo.k = dh, geo.batch = h;
  geo.lda = row, geo.ldb = row, geo.ldc = t;
  geo.stride_a = dh, geo.stride_b = dh, geo.stride_c = t * t;
  geo.offset_a = 0, geo.offset_b = h * dh;
  ops::MatmulOptions opt;
  opt.transpose_b = true;
  opt.alpha = 0.125f;
  Graph g(rt());
  ASSERT_TRUE(ops::matmul_strided(g, rt().caps(), qkv, qkv, out, geo, opt).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  const auto got = download_f32(rt(), out);
  double worst = 0;
  for (int64_t hh = 0; hh < h; ++hh)
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < t; ++j) {
        double sum = 0, scale = 0;
        for (int64_t q = 0; q < dh; ++q) {
          const double x = qkv_h[i * row + hh * dh + q] * double(qkv_h[j * row + h * dh + hh * dh + q]);
          sum += x;
          scale += std::abs(x);
        }
        worst = std::max(worst, std::abs(got[(hh * t + i) * t + j] - 0.125 * sum) / (0.125 * scale + 1e-6));
      }
  EXPECT_LE(worst, 1e-5);
}

TEST_F(MatmulTest, OperandsBeyondTheBindingLimitAreSplitIntoWindows) {
  // A shrunken maxStorageBufferRange forces the chunk planner through batch, M and N splits; the
  // real device still validates every (smaller) binding.
  Capabilities caps = rt().caps();
  caps.max_storage_buffer_range = 16384;  // bytes: 4096 f32
  size_t dispatches = 0;
  Problem weight_rows;  // linear-style weight [N, K] of 150×40 f32 = 24 000 bytes: split over N
  weight_rows.m = 9, weight_rows.n = 150, weight_rows.k = 40, weight_rows.tb = true, weight_rows.bias = true;
  weight_rows.act = Activation::kGeluErf;
  run(weight_rows, DType::kF32, 1000, &caps, &dispatches);
  EXPECT_GT(dispatches, 1u);
  Problem tall;  // A [300, 20] and C [300, 30]: split over M
  tall.m = 300, tall.n = 30, tall.k = 20, tall.beta = 0.5f, tall.residual = true;
  run(tall, DType::kF32, 1010, &caps, &dispatches);
  EXPECT_GT(dispatches, 1u);
  Problem batched;  // 8 batches of 40×40 f16 C (25 600 bytes): split over the batch
  batched.batch = 8, batched.m = 40, batched.n = 40, batched.k = 12, batched.batched_a = true;
  batched.batched_b = true, batched.batched_c = true, batched.tb = true;
  run(batched, DType::kF16, 1020, &caps, &dispatches);
  EXPECT_GT(dispatches, 1u);
}

TEST_F(MatmulTest, UnsplittableOperandsAndSlotsAreRefused) {
  Capabilities caps = rt().caps();
  caps.max_storage_buffer_range = 4096;
  Tensor a = Tensor::empty(rt(), DType::kF32, {4, 2000}).value();  // A [K=4, M=2000] transposed
  Tensor b = Tensor::empty(rt(), DType::kF32, {4, 8}).value();
  Tensor c = Tensor::empty(rt(), DType::kF32, {2000, 8}).value();
  Graph g(rt());
  ops::MatmulOptions opt;
  opt.transpose_a = true;
  EXPECT_EQ(ops::matmul(g, caps, a, b, c, opt).code(), StatusCode::kInvalidArgument);
  Arg big_slot = g.add_slot("x", DType::kF32, {2000, 4});
  EXPECT_EQ(ops::matmul(g, caps, big_slot, b, c).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

TEST_F(MatmulTest, MisuseIsInvalidArgument) {
  auto t = [&](DType d, Shape s) { return Tensor::empty(rt(), d, s).value(); };
  const Capabilities& caps = rt().caps();
  Graph g(rt());
  Tensor a = t(DType::kF32, {4, 5}), b = t(DType::kF32, {5, 6}), c = t(DType::kF32, {4, 6});
  EXPECT_TRUE(ops::matmul(g, caps, a, b, c).is_ok());
  const size_t ok_dispatches = g.dispatch_count();
  EXPECT_EQ(ops::matmul(g, caps, a, t(DType::kF32, {6, 6}), c).code(), StatusCode::kInvalidArgument);  // K
  EXPECT_EQ(ops::matmul(g, caps, a, b, t(DType::kF32, {4, 7})).code(), StatusCode::kInvalidArgument);  // N
  EXPECT_EQ(ops::matmul(g, caps, a, t(DType::kF16, {5, 6}), c).code(), StatusCode::kInvalidArgument);  // dtype
  EXPECT_EQ(ops::matmul(g, caps, t(DType::kI32, {4, 5}), t(DType::kI32, {5, 6}), t(DType::kI32, {4, 6})).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::matmul(g, caps, t(DType::kF32, {20}), b, c).code(), StatusCode::kInvalidArgument);       // rank
  EXPECT_EQ(ops::matmul(g, caps, t(DType::kF32, {2, 4, 5}), b, c).code(), StatusCode::kInvalidArgument);  // batch
  ops::MatmulOptions bad_bias;
  bad_bias.bias = t(DType::kF32, {5});
  EXPECT_EQ(ops::matmul(g, caps, a, b, c, bad_bias).code(), StatusCode::kInvalidArgument);
  ops::MatmulOptions bad_res;
  bad_res.epilogue.residual = t(DType::kF32, {6, 4});
  EXPECT_EQ(ops::matmul(g, caps, a, b, c, bad_res).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::matmul(g, caps, c, t(DType::kF32, {6, 6}), c).code(), StatusCode::kInvalidArgument);  // C aliases A
  ops::MatmulGeometry geo;  // strided form reaching past the end of A
  geo.m = 4, geo.n = 6, geo.k = 5, geo.lda = 6, geo.ldb = 6, geo.ldc = 6;
  EXPECT_EQ(ops::matmul_strided(g, caps, a, b, c, geo).code(), StatusCode::kInvalidArgument);
  ops::MatmulOptions coop;
  coop.path = GemmPath::kCoopMat;
  if (!ops::coopmat_gemm_available(caps)) {
    EXPECT_EQ(ops::matmul(g, caps, a, b, c, coop).code(), StatusCode::kUnimplemented);  // no tensor cores
  }
  EXPECT_EQ(g.dispatch_count(), ok_dispatches);
}

// The tensor-core path (fp16 storage): runs only where VK_NV_cooperative_matrix is present.
class MatmulCoopMatTest : public MatmulTest {
 protected:
  void SetUp() override {
    MatmulTest::SetUp();
    if (!ops::coopmat_gemm_available(rt().caps())) {
      GTEST_SKIP() << "device has no VK_NV_cooperative_matrix 16x16x16 f16->f32 (lavapipe never does)";
    }
  }
};

TEST_F(MatmulCoopMatTest, ActivationsAreWithinFp16RoundingOverTheirWholeRange) {
  // C = act(x) with K = 1 and B = 1, through the 16-byte epilogue (N = 8): the fp16-output
  // activations (GLSL exp) must stay within fp16 rounding of the float64 value.
  const int64_t m = 4801, n = 8;
  std::vector<float> x(m), ones(n, 1.0f);
  for (int64_t i = 0; i < m; ++i) x[i] = -12.0f + 24.0f * float(i) / float(m - 1);
  Tensor ta = upload_f32(rt(), DType::kF16, {m, 1}, x);
  Tensor tb = upload_f32(rt(), DType::kF16, {1, n}, ones);
  const auto xs = download_f32(rt(), ta);  // x as stored in fp16
  for (Activation act : kAllActivations) {
    Tensor tc = poisoned(rt(), DType::kF16, {m, n});
    Graph g(rt());
    ops::MatmulOptions opt;
    opt.epilogue.activation = act;
    opt.path = GemmPath::kCoopMat;
    ASSERT_TRUE(ops::matmul(g, rt().caps(), ta, tb, tc, opt).is_ok());
    ASSERT_TRUE(g.run().is_ok());
    const auto got = download_f32(rt(), tc);
    double worst = 0, worst_x = 0;
    for (int64_t i = 0; i < m; ++i) {
      const double want = activation_reference(xs[i], act);
      for (int64_t j = 0; j < n; ++j) {
        // fp16 rounding (2^-11 relative) of a normal result; its subnormal spacing (2^-24) below.
        const double err = std::abs(got[i * n + j] - want) / (std::abs(want) * 0x1p-11 + 0x1p-24);
        if (err > worst) worst = err, worst_x = xs[i];
      }
    }
    std::printf("%-9s max error %.3g fp16 roundings (at x = %g)\n", ops::activation_name(act), worst, worst_x);
    EXPECT_LE(worst, 2.0) << ops::activation_name(act) << " worst at x = " << worst_x;  // one fp16 ulp
  }
}

TEST_F(MatmulCoopMatTest, MatchesFloat64OnRaggedAlignedAndTransposedShapes) {
  // fp16 storage, and fp32 split into two fp16 parts (shaders/gemm_io.glsl).
  for (const DType dt : {DType::kF16, DType::kF32}) {
    SCOPED_TRACE(dtype_name(dt));
    struct Case {
      int64_t m, n, k;
    };
    uint32_t seed = 2000;
    // Unaligned (scalar-load fallback), 8-aligned (16-byte loads), small and large (≥ 120 tiles), and
    // whole tiles of 64×64×32 and 128×128×32 (loads without bounds checks).
    for (Case c : {Case{1, 1, 1}, Case{37, 70, 45}, Case{64, 72, 40}, Case{200, 130, 33}, Case{1536, 1288, 96},
                   Case{128, 192, 64}, Case{1024, 1152, 256}}) {
      for (int t = 0; t < 4; ++t) {
        Problem p;
        p.m = c.m, p.n = c.n, p.k = c.k, p.ta = t & 1, p.tb = t & 2, p.path = GemmPath::kCoopMat;
        run(p, dt, seed += 10);
      }
    }
  }
}

TEST_F(MatmulCoopMatTest, Fp32SplitIntoFp16PartsKeepsFp32AccuracyAtOtherMagnitudes) {
  // The hi parts are fp16 values and the lo parts carry 2¹¹ (shaders/gemm_io.glsl): small weights
  // against large activations, and the other way round, stay within fp32's tolerance.
  uint32_t seed = 3100;
  for (const auto& [sa, sb] : {std::pair{1e-3f, 1e2f}, std::pair{3e3f, 2e-3f}, std::pair{0.05f, 0.05f}}) {
    Problem p;
    p.m = 300, p.n = 260, p.k = 700, p.tb = true, p.bias = true, p.path = GemmPath::kCoopMat;
    p.scale_a = sa, p.scale_b = sb;
    run(p, DType::kF32, seed += 10);
  }
}

TEST_P(MatmulDtypeTest, ScalarSmallGridsWithLongKAreSplitOnGpus) {
  // A device that reports its SM count (a GPU) splits the scalar tiles of small grids over K, with
  // the whole epilogue after the shares' sum; lavapipe reports none, so the caps here claim 132.
  const DType d = GetParam();
  Capabilities caps = rt().caps();
  caps.shader_core_count = 132;
  Problem p;
  p.batch = 2, p.m = 40, p.n = 56, p.k = 600, p.batched_a = true, p.batched_b = true, p.batched_c = true;
  p.alpha = 0.5f, p.beta = 0.25f, p.bias = true, p.bias_per_row = true, p.residual = true;
  p.act = Activation::kGeluErf, p.path = GemmPath::kScalar;
  size_t dispatches = 0;
  uint64_t scratch = 0;
  run(p, d, 2970, &caps, &dispatches, &scratch);
  EXPECT_EQ(dispatches, 1u) << "one split dispatch; the counters come zeroed";
  EXPECT_GT(scratch, 0u) << "the shares' partial tiles in the graph's scratch";
  Problem t;
  t.m = 70, t.n = 30, t.k = 333, t.ta = true, t.tb = true, t.bias = true, t.path = GemmPath::kScalar;
  run(t, d, 2980, &caps, &dispatches, &scratch);
  EXPECT_GT(scratch, 0u) << "K slices that do not divide evenly among the shares";
  Problem rows;  // the 16×128 tile of few rows, then the 128×16 one of few columns
  rows.m = 12, rows.n = 200, rows.k = 700, rows.tb = true, rows.bias = true, rows.path = GemmPath::kScalar;
  run(rows, d, 2985, &caps, &dispatches, &scratch);
  EXPECT_GT(scratch, 0u);
  Problem cols;
  cols.m = 200, cols.n = 10, cols.k = 700, cols.residual = true, cols.path = GemmPath::kScalar;
  run(cols, d, 2987, &caps, &dispatches, &scratch);
  EXPECT_GT(scratch, 0u);
  caps.shader_core_count = 0;
  run(t, d, 2990, &caps, &dispatches, &scratch);
  EXPECT_EQ(scratch, 0u) << "no SM count, no split";
}

// Every split GEMM of a graph takes its partial tiles and arrival counters from the graph's one
// scratch, as large as the largest of them (with one each, ResNet-50's activations and workspaces
// took 80.5 MiB at batch 1 in fp16, 11.5 with one a graph): two split GEMMs run three times in one
// graph give each time the bits they give
// in graphs of their own, the last share of each tile leaving its counter zeroed for the next GEMM
// and the next run. The scalar core (the caps claim an SM count).
TEST_F(MatmulTest, SplitGemmsOfAGraphShareItsScratch) {
  Capabilities caps = rt().caps();
  caps.shader_core_count = 132;
  ops::MatmulOptions opt;
  opt.path = GemmPath::kScalar;
  struct Gemm {
    Tensor a, b, c;
  };
  const auto make_gemm = [&](int64_t m, int64_t n, int64_t k, uint32_t seed) {
    return Gemm{upload_f32(rt(), DType::kF32, {m, k}, random_floats(m * k, seed)),
                upload_f32(rt(), DType::kF32, {k, n}, random_floats(k * n, seed + 1)),
                Tensor::empty(rt(), DType::kF32, {m, n}).value()};
  };
  const Gemm first = make_gemm(40, 56, 1500, 3200), second = make_gemm(70, 30, 900, 3210);
  std::vector<std::vector<float>> alone;
  uint64_t alone_bytes = 0, largest = 0;
  for (const Gemm* x : {&first, &second}) {
    Graph g(rt());
    ASSERT_TRUE(ops::matmul(g, caps, x->a, x->b, x->c, opt).is_ok());
    ASSERT_GT(g.scratch_bytes(), 0u) << "split";
    alone_bytes += g.scratch_bytes(), largest = std::max(largest, g.scratch_bytes());
    ASSERT_TRUE(g.run().is_ok());
    alone.push_back(download_f32(rt(), x->c));
  }
  Graph g(rt());
  for (const Gemm* x : {&first, &second}) ASSERT_TRUE(ops::matmul(g, caps, x->a, x->b, x->c, opt).is_ok());
  EXPECT_GE(g.scratch_bytes(), largest);
  EXPECT_LT(g.scratch_bytes(), alone_bytes) << "one workspace, not one each";
  for (int run = 0; run < 3; ++run) {
    ASSERT_TRUE(g.run().is_ok());
    size_t i = 0;
    for (const Gemm* x : {&first, &second}) {
      const std::vector<float> got = download_f32(rt(), x->c);
      ASSERT_EQ(std::memcmp(got.data(), alone[i].data(), got.size() * sizeof(float)), 0) << "run " << run;
      ++i;
    }
  }
}

TEST_F(MatmulTest, SplitSumsRepeatToTheBitWhicheverShareArrivesLast) {
  // The last share of a split tile adds all the shares in share order, so runs repeat to the bit
  // (when it began from its own share, the logits of ResNet-50 in fp16 moved between runs). The
  // scalar core here (the caps claim an SM count), the tensor-core one where the device has it.
  Capabilities caps = rt().caps();
  caps.shader_core_count = 132;
  std::vector<GemmPath> paths = {GemmPath::kScalar};
  if (ops::coopmat_gemm_available(caps)) paths.push_back(GemmPath::kCoopMat);
  for (const GemmPath path : paths) {
    SCOPED_TRACE(path == GemmPath::kScalar ? "scalar" : "tensor cores");
    const int64_t m = 40, n = 56, k = 3000;
    const Tensor a = upload_f32(rt(), DType::kF32, {m, k}, random_floats(m * k, 3100));
    const Tensor b = upload_f32(rt(), DType::kF32, {k, n}, random_floats(k * n, 3101));
    const Tensor c = Tensor::empty(rt(), DType::kF32, {m, n}).value();
    ops::MatmulOptions opt;
    opt.path = path;
    Graph g(rt());
    const Status s = ops::matmul(g, caps, a, b, c, opt);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_GT(g.scratch_bytes(), 0u) << "split over K";
    std::vector<float> first;
    for (int run = 0; run < 6; ++run) {
      ASSERT_TRUE(g.run().is_ok());
      const std::vector<float> got = download_f32(rt(), c);
      if (run == 0) {
        first = got;
      } else {
        ASSERT_EQ(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)), 0) << "run " << run;
      }
    }
  }
}

TEST_F(MatmulCoopMatTest, SmallGridsWithLongKAreSplitOverWorkgroups) {
  // fp16 storage, and fp32 split into two fp16 parts (shaders/gemm_io.glsl).
  for (const DType dt : {DType::kF16, DType::kF32}) {
    SCOPED_TRACE(dtype_name(dt));
    // One or a few tiles and K of many slices: the shares' partial tiles are summed by the last
    // workgroup to arrive, which runs the whole epilogue (alpha, beta, bias, GELU, residual).
    Problem p;
    p.batch = 3, p.m = 40, p.n = 56, p.k = 1000, p.batched_a = true, p.batched_b = true, p.batched_c = true;
    p.alpha = 0.5f, p.beta = 0.25f, p.bias = true, p.bias_per_row = true, p.residual = true;
    p.act = Activation::kGeluErf, p.path = GemmPath::kCoopMat;
    size_t dispatches = 0;
    uint64_t scratch = 0;
    run(p, dt, 2900, nullptr, &dispatches, &scratch);
    EXPECT_EQ(dispatches, 1u) << "one split dispatch; the counters come zeroed";
    EXPECT_GT(scratch, 0u);
    Problem t;
    t.m = 130, t.n = 70, t.k = 3000, t.ta = true, t.tb = true, t.bias = true, t.path = GemmPath::kCoopMat;
    run(t, dt, 2910, nullptr, &dispatches, &scratch);
    EXPECT_GT(scratch, 0u);
  }
}

TEST_F(MatmulCoopMatTest, GridsWithARaggedLastWaveAreSplitWhereTheSmCountIsKnown) {
  // 9×9 tiles of 128×128 on a device claiming 60 SMs: two waves of 94 slices unsplit, or three of
  // half-K shares (wave_balanced_splits). The caps without an SM count keep the single dispatch.
  Problem p;
  p.m = 1100, p.n = 1030, p.k = 3000, p.tb = true, p.bias = true, p.residual = true, p.act = Activation::kGeluErf;
  p.path = GemmPath::kCoopMat;
  Capabilities caps = rt().caps();
  caps.shader_core_count = 60;
  size_t dispatches = 0;
  uint64_t scratch = 0;
  run(p, DType::kF16, 2950, &caps, &dispatches, &scratch);
  EXPECT_GT(scratch, 0u) << "split";
  caps.shader_core_count = 0;
  run(p, DType::kF16, 2960, &caps, &dispatches, &scratch);
  EXPECT_EQ(scratch, 0u);
}

TEST_F(MatmulCoopMatTest, SplitKGraphsRunAgainWithOtherOperands) {
  // Each split tile's last share zeroes its arrival counter again: runs of one graph with another
  // operand bound each get their own product (with a counter left counting, no share would run the
  // epilogue and C would keep the previous run's product).
  for (const DType dt : {DType::kF16, DType::kF32}) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t m = 40, n = 56, k = 1000;
    Tensor b = upload_f32(rt(), dt, {k, n}, random_floats(k * n, 3000));
    Tensor c = Tensor::empty(rt(), dt, {m, n}).value();
    const Tensor a1 = upload_f32(rt(), dt, {m, k}, random_floats(m * k, 3001));
    const Tensor a2 = upload_f32(rt(), dt, {m, k}, random_floats(m * k, 3002));
    Graph g(rt());
    const Arg a = g.add_slot("a", dt, {m, k});
    ops::MatmulOptions opt;
    opt.path = GemmPath::kCoopMat;
    const Status s = ops::matmul(g, rt().caps(), a, b, c, opt);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    const auto hb = download_f32(rt(), b);
    int round = 0;
    for (const Tensor* t : {&a1, &a2, &a1, &a2}) {
      SCOPED_TRACE(round++);
      ASSERT_TRUE(g.bind(a, *t).is_ok());
      ASSERT_TRUE(g.run().is_ok());
      const auto ha = download_f32(rt(), *t), got = download_f32(rt(), c);
      double worst = 0;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0, scale = 0;
          for (int64_t q = 0; q < k; ++q) {
            sum += double(ha[i * k + q]) * hb[q * n + j];
            scale += std::abs(double(ha[i * k + q]) * hb[q * n + j]);
          }
          worst = std::max(worst, std::abs(got[i * n + j] - sum) / (scale + std::abs(sum) + 1e-6));
        }
      }
      EXPECT_LE(worst, dt == DType::kF32 ? 1e-5 : 2e-3);
    }
  }
}

TEST_F(MatmulCoopMatTest, EpilogueAndBatchesMatchFloat64) {
  // fp16 storage, and fp32 split into two fp16 parts (shaders/gemm_io.glsl).
  for (const DType dt : {DType::kF16, DType::kF32}) {
    SCOPED_TRACE(dtype_name(dt));
    uint32_t seed = 2500;
    for (Activation act : kAllActivations) {
      Problem p;
      p.m = 77, p.n = 96, p.k = 64, p.tb = true, p.alpha = 0.5f, p.beta = 0.25f, p.bias = true, p.residual = true;
      p.act = act, p.path = GemmPath::kCoopMat;
      run(p, dt, seed += 10);
    }
    Problem b;
    b.batch = 3, b.m = 40, b.n = 56, b.k = 24, b.batched_a = true, b.batched_b = true, b.batched_c = true;
    b.bias = true, b.bias_per_row = true, b.path = GemmPath::kCoopMat;
    run(b, dt, 2600);
    Capabilities caps = rt().caps();
    caps.max_storage_buffer_range = 16384;
    Problem split;
    split.m = 50, split.n = 300, split.k = 40, split.tb = true, split.bias = true, split.path = GemmPath::kCoopMat;
    size_t dispatches = 0;
    run(split, dt, 2700, &caps, &dispatches);
    EXPECT_GT(dispatches, 1u);
  }
  // Many-tile GEMMs of short K with a residual, ragged in M: tiles of 16 subgroups, 128×64 and
  // 128×128, with the residual loaded ahead of the epilogue (ResNet's 1×1 convolutions' shapes).
  for (const int64_t k : {64, 200}) {
    Problem short_k;
    short_k.m = 4100, short_k.n = 256, short_k.k = k, short_k.tb = true, short_k.bias = true;
    short_k.residual = true, short_k.act = Activation::kRelu, short_k.path = GemmPath::kCoopMat;
    run(short_k, DType::kF16, 2800 + static_cast<uint32_t>(k));
  }
}

// The capabilities of a GPU with the tensor-core GEMM (an H200's shared memory), for the tile rules'
// device-free tests.
Capabilities tensor_core_caps() {
  Capabilities caps;
  caps.nv_cooperative_matrix = caps.storage_16bit = caps.shader_float16 = true;
  caps.subgroup_size = 32;
  caps.max_workgroup_invocations = 1024;
  caps.max_compute_shared_memory = 49152;
  caps.coopmat_shapes.push_back({16, 16, 16, "f16", "f16", "f32", "f32", "NV subgroup"});
  return caps;
}

// The tile rule counts a batch's problems together. One DPT convolution image at 1/8 resolution
// (256 channels, 48×64 pixels) is 48 tiles of 128×128, under the 64 that take them; 8 images are 384.
TEST(GemmTiling, CountsTheTilesOfEveryProblemInTheGrid) {
  Capabilities caps = tensor_core_caps();
  ASSERT_TRUE(ops::coopmat_gemm_available(caps));
  auto tile = [&](int64_t batch) {
    return ops::choose_gemm_tiling(caps, DType::kF16, 256, 48 * 64, 2304, GemmPath::kAuto, false, batch).value();
  };
  EXPECT_TRUE(tile(1).coopmat);
  EXPECT_EQ(tile(1).bm, 64u);
  EXPECT_EQ(tile(8).bm, 128u);
  EXPECT_EQ(tile(8).bn, 128u);
  EXPECT_EQ(tile(0).bm, 64u) << "an empty batch counts as one problem";
  // Many waves of 128×128 tiles over a row-major B: BK = 16, two slices in flight for whole tiles.
  const auto whole = ops::choose_gemm_tiling(caps, DType::kF16, 12288, 4096, 1024, GemmPath::kAuto, true, 1).value();
  EXPECT_EQ(whole.bk, 16u);
  EXPECT_EQ(whole.prefetch, 2u);
  const auto ragged = ops::choose_gemm_tiling(caps, DType::kF16, 12288, 4100, 1024, GemmPath::kAuto, true, 1).value();
  EXPECT_EQ(ragged.bk, 16u);
  EXPECT_EQ(ragged.prefetch, 1u);
}

// Grids of many 128×128 tiles take half-size tiles where a full one would be half padding:
// ResNet-50's convolutions at batch 32 (64 output channels, 7×7 maps). The MASt3R shapes above,
// and short K alone, keep 128×128.
TEST(GemmTiling, NarrowProblemsTakeHalfTiles) {
  Capabilities caps = tensor_core_caps();
  const auto tile = [&](int64_t m, int64_t n, int64_t k) {
    return ops::choose_gemm_tiling(caps, DType::kF16, m, n, k, GemmPath::kAuto, true, 32).value();
  };
  const auto channels64 = tile(64, 56 * 56, 576);  // the 3×3 convolution at 56×56
  EXPECT_EQ(channels64.bm, 64u);
  EXPECT_EQ(channels64.bn, 64u);
  EXPECT_EQ(channels64.bk, 16u);
  EXPECT_EQ(channels64.wg_size, 128u) << "2×2 subgroups of 2×2 fragments";
  EXPECT_EQ(tile(256, 56 * 56, 64).bm, 128u) << "the 1×1 convolution of 64 channels into 256";
  const auto map7 = tile(512, 49, 4608);  // the 3×3 convolution at 7×7
  EXPECT_EQ(map7.bm, 128u);
  EXPECT_EQ(map7.bn, 64u);
  EXPECT_EQ(map7.bk, 32u);
  EXPECT_EQ(map7.spec()[4], 4u) << "4×2 subgroups";
  EXPECT_EQ(tile(2048, 49, 512).bk, 16u) << "the 1×1 convolution of 512 channels into 2048";
  const auto map14 = tile(256, 196, 2304);  // the 3×3 convolution at 14×14
  EXPECT_EQ(map14.bm, 128u);
  EXPECT_EQ(map14.bn, 128u);
  // Channels-last (conv2d_nhwc.h): M = the batch's pixels, B the weights transposed ([N, K]).
  const auto nhwc = [&](int64_t m, int64_t n, int64_t k) {
    return ops::choose_gemm_tiling(caps, DType::kF16, m, n, k, GemmPath::kAuto, false, 1).value();
  };
  const auto short_k = nhwc(32 * 56 * 56, 256, 64);  // the 1×1 convolution of 64 channels into 256
  EXPECT_EQ(short_k.bm, 128u);
  EXPECT_EQ(short_k.bn, 64u);
  EXPECT_EQ(short_k.bk, 16u);
  EXPECT_EQ(short_k.wg_size, 512u) << "4×4 subgroups";
  const auto k256 = nhwc(32 * 14 * 14, 1024, 256);  // the 1×1 convolution of 256 channels into 1024
  EXPECT_EQ(k256.bm, 128u);
  EXPECT_EQ(k256.bn, 128u);
  EXPECT_EQ(k256.bk, 32u);
  EXPECT_EQ(k256.spec()[4], 4u) << "4×4 subgroups up to K = 512";
  EXPECT_EQ(k256.spec()[5], 4u);
  EXPECT_EQ(nhwc(32 * 14 * 14, 256, 2304).wg_size, 256u) << "the 3×3 convolution keeps 2×4 subgroups";
  EXPECT_EQ(tile(256, 56 * 56, 64).bm, 128u) << "B row-major (NCHW) keeps it too";
  // The 3×3 convolution at 7×7: 52 tiles of 144 slices, which a GPU of 132 SMs splits in two.
  Capabilities gpu = caps;
  gpu.shader_core_count = 132;
  const auto half_wave = ops::choose_gemm_tiling(gpu, DType::kF16, 32 * 7 * 7, 512, 4608, GemmPath::kAuto, false, 1);
  EXPECT_EQ(half_wave->bm, 128u);
  EXPECT_EQ(half_wave->bn, 128u);
  EXPECT_EQ(half_wave->bk, 32u);
  EXPECT_EQ(ops::wave_balanced_splits(52, 144, 132), 2);
  EXPECT_EQ(nhwc(32 * 7 * 7, 512, 4608).bm, 64u) << "without an SM count to split by: 64×64 tiles";
}

// The scalar core's tiles: on a GPU (a device that reports its SM count) with B stored [N, K] as
// channels-last convolutions have it, 128×64 tiles for 64 columns or K ≤ 128, 64×128 tiles of 8×8 in
// 128 invocations for half a wave of K ≥ 4096, and 128×128 tiles from 64 of them with 16-deep
// slices for K ≥ 256; a CPU driver, and B row-major, keep 128×128 tiles (8 deep) for 256 and more
// per image, 64×64 otherwise.
TEST(GemmTiling, ScalarTilesOnAGpuFollowTheChannelsLastSweep) {
  Capabilities caps;
  caps.max_compute_shared_memory = 49152;
  const auto tile = [&](const Capabilities& c, int64_t m, int64_t n, int64_t k, bool b_row_major) {
    const auto t = ops::choose_gemm_tiling(c, DType::kF32, m, n, k, GemmPath::kAuto, b_row_major, 1).value();
    EXPECT_FALSE(t.coopmat);
    EXPECT_EQ(t.wg_size, (t.bm / t.t0) * (t.bn / t.t1));
    return std::array<uint32_t, 5>{t.bm, t.bn, t.bk, t.t0, t.t1};
  };
  Capabilities gpu = caps;
  gpu.shader_core_count = 132;
  using T = std::array<uint32_t, 5>;
  EXPECT_EQ(tile(gpu, 32 * 56 * 56, 64, 576, false), (T{128, 64, 8, 8, 4})) << "the 3x3 into 64 channels";
  EXPECT_EQ(tile(gpu, 32 * 14 * 14, 256, 2304, false), (T{128, 128, 16, 8, 8})) << "98 tiles, deep K";
  EXPECT_EQ(tile(gpu, 32 * 56 * 56, 256, 64, false), (T{128, 64, 8, 8, 4})) << "short K";
  EXPECT_EQ(tile(gpu, 32 * 14 * 14, 1024, 256, false), (T{128, 128, 16, 8, 8}));
  EXPECT_EQ(tile(gpu, 32 * 7 * 7, 512, 4608, false), (T{64, 128, 16, 8, 8})) << "52 tiles, long K";
  EXPECT_EQ(tile(gpu, 32 * 7 * 7, 512, 2048, false), (T{64, 64, 16, 4, 4})) << "52 tiles";
  EXPECT_EQ(tile(gpu, 7 * 7, 512, 4608, false), (T{64, 64, 16, 4, 4})) << "4 tiles: split over K instead";
  EXPECT_EQ(tile(gpu, 256, 32 * 14 * 14, 2304, true), (T{64, 64, 16, 4, 4})) << "B row-major: the CPU rules";
  EXPECT_EQ(tile(caps, 32 * 14 * 14, 256, 2304, false), (T{64, 64, 16, 4, 4})) << "no SM count";
  EXPECT_EQ(tile(caps, 32 * 56 * 56, 256, 64, false), (T{128, 128, 8, 8, 8}));
  const auto batched = ops::choose_gemm_tiling(caps, DType::kF32, 64, 56 * 56, 576, GemmPath::kAuto, true, 32);
  EXPECT_EQ(batched->bm, 64u) << "a CPU driver counts an image's tiles: 25";
  gpu.max_compute_shared_memory = 32768;
  EXPECT_EQ(tile(gpu, 32 * 14 * 14, 256, 2304, false), (T{128, 128, 8, 8, 8})) << "33 KiB do not fit";
}

// The GPU tiles above on the device (its caps claiming an SM count): 128×64, 64×128, and 128×128 with
// 16-deep slices where the shared memory holds them (not on lavapipe: 8 deep), 4 elements at a
// time and one at a time, against float64.
TEST_F(MatmulTest, ScalarGpuTilesMatchFloat64) {
  Capabilities caps = rt().caps();
  caps.shader_core_count = 132;
  Problem narrow;  // 64 tiles of 128×64
  narrow.m = 128 * 64 - 4, narrow.n = 60, narrow.k = 36, narrow.tb = true, narrow.bias = true, narrow.residual = true;
  narrow.act = Activation::kRelu;
  run(narrow, DType::kF32, 800, &caps);
  Problem deep;  // 64 tiles of 128×128, K ≥ 256
  deep.m = 1024, deep.n = 1000, deep.k = 260, deep.tb = true, deep.bias = true, deep.residual = true;
  run(deep, DType::kF32, 810, &caps);
  deep.k = 257;  // K not a multiple of 4: one element at a time
  run(deep, DType::kF32, 820, &caps);
  Problem long_k;  // 64×128 tiles of 8×8 in 128 invocations (32 tiles of 128×128)
  long_k.m = 1000, long_k.n = 500, long_k.k = 4100, long_k.tb = true, long_k.residual = true;
  run(long_k, DType::kF32, 830, &caps);
}

// fp32 storage runs on tensor cores split into two fp16 parts (shaders/gemm_io.glsl) where the caller
// asks (kAutoSplitF32, or kCoopMat), which doubles the staged slices: 128×128 tiles (41 KiB of
// shared memory) only over a row-major B, whose slice is the smaller (a column-major one would need
// the whole 48 KiB), else 64×64; BK = 16, one slice in flight. kAuto keeps fp32 on the scalar path,
// as does kAutoSplitF32 without tensor cores; kCoopMat is then refused. kAutoSplitF32 and kCoopMat
// round each K slice's sum into the total (constant 7 = 1); kAutoSplitF32Coarse does not.
TEST(GemmTiling, Fp32RunsSplitOnTensorCoresWhereAskedWithTilesThatFitSharedMemory) {
  Capabilities caps = tensor_core_caps();
  const auto tiling = [&](DType d, GemmPath path, bool b_row_major) {
    return ops::choose_gemm_tiling(caps, d, 6144, 7168, 1792, path, b_row_major, 1).value();
  };
  const auto rows = tiling(DType::kF32, GemmPath::kAutoSplitF32, true);
  EXPECT_TRUE(rows.coopmat && rows.split);
  EXPECT_EQ(rows.bm, 128u);
  EXPECT_EQ(rows.bn, 128u);
  EXPECT_EQ(rows.bk, 16u);
  EXPECT_EQ(rows.prefetch, 1u);
  EXPECT_EQ(rows.spec()[7], 1u);
  const auto coarse = tiling(DType::kF32, GemmPath::kAutoSplitF32Coarse, true);
  EXPECT_TRUE(coarse.coopmat && coarse.split);
  EXPECT_EQ(coarse.bm, rows.bm);
  EXPECT_EQ(coarse.spec()[7], 0u);
  const auto cols = tiling(DType::kF32, GemmPath::kCoopMat, false);
  EXPECT_TRUE(cols.split);
  EXPECT_EQ(cols.spec()[7], 1u);
  EXPECT_EQ(cols.bm, 64u);
  EXPECT_EQ(cols.bn, 64u);
  EXPECT_FALSE(tiling(DType::kF32, GemmPath::kAuto, true).coopmat);
  EXPECT_FALSE(tiling(DType::kF32, GemmPath::kScalar, true).coopmat);
  const auto f16 = tiling(DType::kF16, GemmPath::kAutoSplitF32, true);
  EXPECT_TRUE(f16.coopmat);
  EXPECT_FALSE(f16.split);
  caps.nv_cooperative_matrix = false;
  EXPECT_FALSE(tiling(DType::kF32, GemmPath::kAutoSplitF32, true).coopmat);
  EXPECT_EQ(ops::choose_gemm_tiling(caps, DType::kF32, 64, 64, 64, GemmPath::kCoopMat, true, 1).status().code(),
            StatusCode::kUnimplemented);
}

TEST(GemmWaves, SplitsOnlyWhereWholeWavesOfSharesFinishSooner) {
  // An H200 holds 132 of the 128×128 two-register-set tiles at once.
  EXPECT_EQ(ops::wave_balanced_splits(300, 224, 132), 3) << "local-feature fc2: 7 waves of third-K shares";
  EXPECT_EQ(ops::wave_balanced_splits(96, 128, 132), 1) << "ViT-L fc2 at batch 1: quarters measured slower";
  EXPECT_EQ(ops::wave_balanced_splits(96, 32, 132), 1) << "K too short to pay for the partial tiles";
  EXPECT_EQ(ops::wave_balanced_splits(384, 32, 132), 1) << "2.9 waves already";
  EXPECT_EQ(ops::wave_balanced_splits(768, 128, 132), 1) << "batch 8: 5.8 waves";
  EXPECT_EQ(ops::wave_balanced_splits(81, 94, 60), 2);
  EXPECT_EQ(ops::wave_balanced_splits(81, 32, 60), 1);
  EXPECT_EQ(ops::wave_balanced_splits(0, 32, 60), 1);
  EXPECT_EQ(ops::wave_balanced_splits(81, 32, 0), 1);
}

// Grids of 128×128 BK = 16 tiles (fp16), two of which fit an SM, split where they leave places
// empty and whole waves of shares finish sooner: ResNet-50's 3×3 convolutions at batch 32 (H200:
// 147 → 125 µs at 14×14; 284 → 206 µs at 7×7, which now takes 128×64 tiles instead). The planner needs a graph for the
// workspace it allocates, not tensor cores, so this runs on any device.
TEST_F(MatmulTest, OneWaveGridsOfTwoTilesAnSmSplitOverK) {
  Capabilities caps = tensor_core_caps();
  caps.shader_core_count = 132;  // an H200
  caps.max_workgroup_count[2] = 65535;
  const auto splits = [&](int64_t m, int64_t n, int64_t k, int64_t batch, uint32_t bk, bool split = false) {
    ops::GemmTiling t;
    t.coopmat = true, t.split = split, t.bm = 128, t.bn = 128, t.bk = bk, t.prefetch = 2;
    Graph g(rt());
    EXPECT_TRUE(ops::GemmSplitK::plan(g, caps, t, m, n, k, batch).is_ok());
    return t.splits;
  };
  EXPECT_EQ(splits(256, 196, 2304, 32, 16), 2u) << "3x3 at 14x14: 128 tiles of 144 slices";
  EXPECT_EQ(splits(512, 49, 4608, 32, 16), 2u) << "3x3 at 7x7: 128 tiles of 288 slices";
  EXPECT_EQ(splits(128, 784, 1152, 32, 16), 1u) << "3x3 at 28x28: 224 tiles of 72 slices, one wave already";
  EXPECT_EQ(splits(1024, 196, 256, 32, 16), 1u) << "512 tiles: two waves";
  EXPECT_EQ(splits(256, 196, 2304, 32, 32), 1u) << "BK = 32 holds one tile an SM: 128 tiles fill the device";
  EXPECT_EQ(splits(256, 196, 2304, 32, 16, true), 1u) << "fp32 split into parts: not measured";
  caps.shader_core_count = 0;
  EXPECT_EQ(splits(256, 196, 2304, 32, 16), 1u) << "without an SM count";
}

// Throughput on the device (run with RECON_GEMM_BENCH=1; RECON_GEMM_SIZE=n for n³, default 4096):
// the auto-selected paths, MASt3R's linear shapes, then a sweep of tensor-core tile geometries
// dispatched directly (the push struct below mirrors shaders/matmul_coopmat.comp).
struct BenchPush {
  uint32_t m, n, k, lda, ldb, ldc, stride_a, stride_b, stride_c, off_a, off_b, off_c, off_r, off_bias;
  float alpha, beta;
  uint32_t flags;
};
static_assert(sizeof(BenchPush) == 68, "mirrors Push in shaders/matmul_coopmat.comp");

class MatmulBenchTest : public MatmulTest {
 protected:
  void SetUp() override {
    MatmulTest::SetUp();
    if (std::getenv("RECON_GEMM_BENCH") == nullptr) GTEST_SKIP() << "set RECON_GEMM_BENCH=1 to run";
  }
  // Records `reps` tensor-core GEMM dispatches of one variant, bypassing the op's tile choice
  // (bindings as in matmul_coopmat.comp; the split-K workspace bindings get dummies). Dispatch i
  // reads B from bs[i % bs.size()]: distinct B operands are read from memory like the weights of a
  // model's layers, where one B stays in L2 from one repetition to the next.
  void record_direct(Graph& g, std::span<const uint32_t> spec, const Tensor& a, std::span<const Tensor> bs,
                     const Tensor& c, const Tensor& bias, const Tensor& res, const BenchPush& push,
                     std::array<uint32_t, 3> groups, int reps) {
    for (int i = 0; i < reps; ++i) {
      ASSERT_TRUE(g.dispatch("matmul_coopmat_f16", spec,
                             {{a, Access::kRead},
                              {bs[static_cast<size_t>(i) % bs.size()], Access::kRead},
                              {c, Access::kWrite},
                              {bias, Access::kRead},
                              {res, Access::kRead},
                              {a, Access::kRead},
                              {a, Access::kRead}},
                             push, groups)
                      .is_ok());
    }
  }
  // Best of 5 runs of a graph holding `reps` identical GEMMs, after 3 warm-up runs.
  double time_graph(Graph& g, int reps) { return seconds_per_dispatch(g, reps, 3); }
};

TEST_F(MatmulBenchTest, AutoPathsAndMast3rShapes) {
  const int64_t s = std::getenv("RECON_GEMM_SIZE") ? std::atoll(std::getenv("RECON_GEMM_SIZE")) : 4096;
  struct Shape3 {
    int64_t m, n, k;
    bool tb;
    const char* what;
  };
  const Shape3 shapes[] = {{s, s, s, false, "square nn"},       {s, s, s, true, "square nt"},
                           {1536, 3072, 1024, true, "enc qkv"}, {1536, 4096, 1024, true, "enc fc1"},
                           {1536, 1024, 4096, true, "enc fc2"}, {768, 768, 768, true, "dec proj"},
                           {768, 6400, 7168, true, "head fc2"}};
  for (GemmPath path : {GemmPath::kCoopMat, GemmPath::kScalar}) {
    for (DType d : {DType::kF16, DType::kF32}) {
      if (path == GemmPath::kCoopMat && (d != DType::kF16 || !ops::coopmat_gemm_available(rt().caps()))) continue;
      for (const Shape3& sh : shapes) {
        if (path == GemmPath::kScalar && sh.m != s) continue;  // scalar: the square case only
        Tensor a = upload_f32(rt(), d, {sh.m, sh.k}, random_floats(sh.m * sh.k, 1));
        Tensor b = upload_f32(rt(), d, sh.tb ? Shape{sh.n, sh.k} : Shape{sh.k, sh.n}, random_floats(sh.k * sh.n, 2));
        Tensor c = Tensor::empty(rt(), d, {sh.m, sh.n}).value();
        Graph g(rt());
        ops::MatmulOptions opt;
        opt.path = path;
        opt.transpose_b = sh.tb;
        const int reps = 10;
        for (int i = 0; i < reps; ++i) ASSERT_TRUE(ops::matmul(g, rt().caps(), a, b, c, opt).is_ok());
        const double t = time_graph(g, reps);
        std::printf("BENCH %-8s %s %-10s %5lldx%5lldx%5lld: %7.1f TFLOP/s %8.3f ms\n",
                    path == GemmPath::kCoopMat ? "coopmat" : "scalar", dtype_name(d), sh.what, (long long)sh.m,
                    (long long)sh.n, (long long)sh.k, 2.0 * sh.m * sh.n * sh.k / t * 1e-12, t * 1e3);
        if (path != GemmPath::kCoopMat || sh.m == s) continue;
        // The same GEMM with the epilogue the model runs on it: bias, GELU (erf) and a residual.
        Tensor bias = upload_f32(rt(), d, {sh.n}, random_floats(sh.n, 3));
        Tensor res = upload_f32(rt(), d, {sh.m, sh.n}, random_floats(sh.m * sh.n, 4));
        opt.bias = Arg(bias);
        opt.epilogue.activation = Activation::kGeluErf;
        opt.epilogue.residual = Arg(res);
        Graph ge(rt());
        for (int i = 0; i < reps; ++i) ASSERT_TRUE(ops::matmul(ge, rt().caps(), a, b, c, opt).is_ok());
        const double te = time_graph(ge, reps);
        std::printf("BENCH %-8s %s %-10s %5lldx%5lldx%5lld: %7.1f TFLOP/s %8.3f ms with bias+GELU+residual\n",
                    "coopmat", dtype_name(d), sh.what, (long long)sh.m, (long long)sh.n, (long long)sh.k,
                    2.0 * sh.m * sh.n * sh.k / te * 1e-12, te * 1e3);
      }
    }
  }
}

TEST_F(MatmulBenchTest, CoopMatTileSweep) {
  if (!ops::coopmat_gemm_available(rt().caps())) GTEST_SKIP() << "no tensor cores";
  const uint32_t sg = rt().caps().subgroup_size;
  struct Tile {
    uint32_t bm, bn, bk, wm, wn, prefetch;
  };
  const Tile tiles[] = {{128, 128, 32, 2, 4, 1}, {128, 128, 32, 2, 4, 2}, {128, 128, 16, 2, 4, 1},
                        {128, 128, 16, 2, 4, 2}, {128, 256, 16, 2, 4, 1}, {128, 256, 16, 2, 4, 2},
                        {64, 64, 32, 2, 2, 1},   {64, 64, 32, 2, 2, 2},   {64, 64, 16, 2, 2, 2},
                        {64, 128, 32, 2, 4, 2},  {128, 64, 32, 4, 2, 2},  {128, 128, 32, 2, 2, 2},
                        {64, 64, 64, 2, 2, 1},   {64, 64, 64, 2, 2, 2},   {64, 128, 64, 2, 4, 1},
                        {128, 96, 16, 2, 3, 1},  {128, 96, 16, 2, 3, 2},  {128, 96, 32, 2, 3, 2}};
  struct Shape3 {
    int64_t m, n, k;
    bool tb;
  };
  const Shape3 shapes[] = {
      {4096, 4096, 4096, false},  {4096, 4096, 4096, true},   {1536, 3072, 1024, true},   {1536, 4096, 1024, true},
      {1536, 1024, 4096, true},   {768, 6400, 7168, true},    {768, 3072, 768, true},     {768, 768, 768, true},
      {1536, 3072, 1024, false},  {1536, 4096, 1024, false},  {1536, 1024, 4096, false},  {768, 6400, 7168, false},
      {768, 3072, 768, false},    {768, 768, 768, false},     {768, 2304, 768, false},    {768, 768, 3072, false},
      {12288, 3072, 1024, false}, {12288, 4096, 1024, false}, {12288, 1024, 4096, false}, {6144, 768, 768, false},
      {6144, 768, 3072, false},   {6144, 2304, 768, false},   {6144, 3072, 768, false}};
  // RECON_GEMM_SWEEP_SHAPES=MxNxK[,…] keeps only those shapes.
  const char* only = std::getenv("RECON_GEMM_SWEEP_SHAPES");
  const bool try_aligned = std::getenv("RECON_GEMM_SWEEP_ALIGNED") != nullptr;
  const int reps = 10;
  for (const Shape3& sh : shapes) {
    const std::string name = std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k);
    if (only != nullptr && ("," + std::string(only) + ",").find("," + name + ",") == std::string::npos) continue;
    Tensor a = upload_f32(rt(), DType::kF16, {sh.m, sh.k}, random_floats(sh.m * sh.k, 1));
    const std::vector<float> hb = random_floats(sh.k * sh.n, 2);
    std::vector<Tensor> bs;  // one B per repetition, as every layer of a model has its own weights
    for (int i = 0; i < reps; ++i) bs.push_back(upload_f32(rt(), DType::kF16, {sh.k, sh.n}, hb));
    Tensor c = Tensor::empty(rt(), DType::kF16, {sh.m, sh.n}).value();
    for (const Tile& t : tiles) {
      const uint32_t a_rows = t.bm, a_cols = t.bk;  // row-major A
      const uint32_t b_rows = sh.tb ? t.bn : t.bk, b_cols = sh.tb ? t.bk : t.bn;
      const uint32_t smem = 2 * 16 * (a_rows * (a_cols / 8 + 1) + b_rows * (b_cols / 8 + 1));
      if (smem > rt().caps().max_compute_shared_memory || t.wm * t.wn * sg > 1024) continue;
      const bool aligned = sh.m % t.bm == 0 && sh.n % t.bn == 0 && sh.k % t.bk == 0;
      // The GEMM core's constants (gemm_coopmat.glsl), then TRANS_A, TRANS_B, VEC_A, VEC_B, VEC_C, ROPE, ALIGNED.
      std::vector<uint32_t> spec = {t.wm * t.wn * sg, t.bm, t.bn, t.bk, t.wm, t.wn, 1, t.prefetch};
      spec.insert(spec.end(), {0, sh.tb ? 1u : 0u, 1, 1, 0, 0, aligned && try_aligned ? 1u : 0u});
      BenchPush push{};
      push.m = static_cast<uint32_t>(sh.m), push.n = static_cast<uint32_t>(sh.n), push.k = static_cast<uint32_t>(sh.k);
      push.lda = static_cast<uint32_t>(sh.k), push.ldb = static_cast<uint32_t>(sh.tb ? sh.k : sh.n);
      push.ldc = static_cast<uint32_t>(sh.n);
      push.alpha = 1.0f;
      Graph g(rt());
      record_direct(
          g, spec, a, bs, c, a, a, push,
          {static_cast<uint32_t>((sh.m + t.bm - 1) / t.bm), static_cast<uint32_t>((sh.n + t.bn - 1) / t.bn), 1}, reps);
      const double sec = time_graph(g, reps);
      auto pipeline = rt().pipelines().get("matmul_coopmat_f16", spec);
      std::printf("SWEEP %s %5lldx%5lldx%5lld tile %3ux%3ux%2u sg %ux%u pf %u smem %5u: %7.1f TFLOP/s  %s\n",
                  sh.tb ? "nt" : "nn", (long long)sh.m, (long long)sh.n, (long long)sh.k, t.bm, t.bn, t.bk, t.wm, t.wn,
                  t.prefetch, smem, 2.0 * sh.m * sh.n * sh.k / sec * 1e-12,
                  pipeline.is_ok() ? (*pipeline)->statistics.c_str() : "");
    }
  }
}

// The op's own choice with the device's SM count against the same caps without it (no split).
TEST_F(MatmulBenchTest, WaveBalancedSplitK) {
  if (!ops::coopmat_gemm_available(rt().caps())) GTEST_SKIP() << "no tensor cores";
  if (rt().caps().shader_core_count == 0) GTEST_SKIP() << "the device does not report its SM count";
  struct Case {
    int64_t m, n, k;
    const char* what;
  };
  const Case cases[] = {{1536, 1024, 4096, "encoder fc2, batch 1"},
                        {768, 6400, 7168, "local-feature fc2"},
                        {1536, 1024, 1024, "encoder proj, batch 1"}};
  for (const Case& cs : cases) {
    Tensor a = upload_f32(rt(), DType::kF16, {cs.m, cs.k}, random_floats(cs.m * cs.k, 1));
    Tensor b = upload_f32(rt(), DType::kF16, {cs.n, cs.k}, random_floats(cs.k * cs.n, 2));
    Tensor bias = upload_f32(rt(), DType::kF16, {cs.n}, random_floats(cs.n, 3));
    Tensor c = Tensor::empty(rt(), DType::kF16, {cs.m, cs.n}).value();
    for (const bool waves : {false, true}) {
      Capabilities caps = rt().caps();
      if (!waves) caps.shader_core_count = 0;
      Graph g(rt());
      const int reps = 10;
      ops::MatmulOptions opt;
      opt.transpose_b = true;
      opt.bias = Arg(bias);
      for (int i = 0; i < reps; ++i) ASSERT_TRUE(ops::matmul(g, caps, a, b, c, opt).is_ok());
      const double sec = time_graph(g, reps);
      std::printf("WAVES %-22s %5lldx%5lldx%5lld %-9s %8.1f us  %6.1f TFLOP/s\n", cs.what, (long long)cs.m,
                  (long long)cs.n, (long long)cs.k, waves ? "balanced" : "unsplit", sec * 1e6,
                  2.0 * cs.m * cs.n * cs.k / sec * 1e-12);
    }
  }
}

// What each epilogue term costs on MASt3R's encoder fc1 shape at batch 1, with element-wise and
// with 16-byte stores (a 128×128×32 tile with two register sets, dispatched directly as in the tile
// sweep).
TEST_F(MatmulBenchTest, EpilogueCost) {
  if (!ops::coopmat_gemm_available(rt().caps())) GTEST_SKIP() << "no tensor cores";
  const uint32_t sg = rt().caps().subgroup_size;
  const int64_t m = 1536, n = 4096, k = 1024;
  Tensor a = upload_f32(rt(), DType::kF16, {m, k}, random_floats(m * k, 1));
  Tensor b = upload_f32(rt(), DType::kF16, {n, k}, random_floats(k * n, 2));
  Tensor c = Tensor::empty(rt(), DType::kF16, {m, n}).value();
  Tensor bias = upload_f32(rt(), DType::kF16, {n}, random_floats(n, 3));
  Tensor res = upload_f32(rt(), DType::kF16, {m, n}, random_floats(m * n, 4));
  const uint32_t gelu = static_cast<uint32_t>(Activation::kGeluErf);
  const std::pair<const char*, uint32_t> epilogues[] = {
      {"none", 0},
      {"bias", ops::kGemmFlagBias},
      {"gelu", gelu},
      {"residual", ops::kGemmFlagResidual},
      {"bias+gelu+residual", ops::kGemmFlagBias | gelu | ops::kGemmFlagResidual}};
  for (uint32_t vec_c : {0u, 1u}) {
    for (const auto& [what, flags] : epilogues) {
      const uint32_t spec[] = {8 * sg, 128, 128, 32, 2, 4, 1, 2, 0, 1, 1, 1, vec_c};
      BenchPush push{};
      push.m = m, push.n = n, push.k = k, push.lda = k, push.ldb = k, push.ldc = n;
      push.alpha = 1.0f;
      push.flags = flags;
      Graph g(rt());
      const int reps = 10;
      record_direct(g, spec, a, std::span<const Tensor>(&b, 1), c, bias, res, push, {12, 32, 1}, reps);
      const double sec = time_graph(g, reps);
      std::printf("EPILOGUE %s stores, %-20s %8.1f us  %6.1f TFLOP/s\n", vec_c ? "16-byte" : "element", what, sec * 1e6,
                  2.0 * m * n * k / sec * 1e-12);
    }
  }
}

}  // namespace
}  // namespace recon::gpu
