// conv_transpose2d (stride = kernel) against a float64 CPU reference computed from the stored
// inputs: DPT's k = s = 4 and k = s = 2 at small odd sizes, a rectangular kernel, batches, bias,
// activation and residual, batch splitting beyond maxStorageBufferRange, the tensor-core path
// where present, and misuse.
#include "gpu/ops/conv_transpose2d.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT
using ops::Activation;
using ops::GemmPath;

struct Case {
  int64_t batch, cin, h, w, cout, kh, kw;
  bool bias = true;
  Activation act = Activation::kNone;
  bool residual = false;
  std::string name;
};

// GpuTest shares one Runtime per process (validation on), so pipelines (up to a second each to
// create on lavapipe) are built once; each test still fails on any validation message it caused.
class ConvTranspose2dTest : public recon::gpu::testing::GpuTest {
 protected:
  // |got − want| ≤ tol·(Σ|w·x| + |bias| + |r| + |want| + 1e-6) (conv_transpose2d.h).
  void check(const Case& c, DType d, GemmPath path, uint32_t seed, const Capabilities* caps_override = nullptr) {
    SCOPED_TRACE(c.name + " " + dtype_name(d));
    const int64_t ho = c.h * c.kh, wo = c.w * c.kw;
    const Shape in_shape{c.batch, c.cin, c.h, c.w}, w_shape{c.cin, c.cout, c.kh, c.kw};
    const Shape out_shape{c.batch, c.cout, ho, wo};
    Tensor in = upload_f32(rt(), d, in_shape, random_floats(shape_numel(in_shape), seed));
    Tensor wt = upload_f32(rt(), d, w_shape, random_floats(shape_numel(w_shape), seed + 1, -0.5f, 0.5f));
    Tensor out = poisoned(rt(), d, out_shape);
    std::optional<Tensor> tb, tr;
    if (c.bias) tb = upload_f32(rt(), d, {c.cout}, random_floats(c.cout, seed + 2));
    if (c.residual) tr = upload_f32(rt(), d, out_shape, random_floats(shape_numel(out_shape), seed + 3));
    const auto hi = download_f32(rt(), in), hw = download_f32(rt(), wt);
    const auto hb = tb ? download_f32(rt(), *tb) : std::vector<float>();
    const auto hr = tr ? download_f32(rt(), *tr) : std::vector<float>();

    ops::Epilogue ep;
    ep.activation = c.act;
    if (tr) ep.residual = *tr;
    std::optional<Arg> bias_arg;
    if (tb) bias_arg = *tb;
    Graph g(rt());
    Status s = ops::conv_transpose2d(g, caps_override ? *caps_override : rt().caps(), in, wt, bias_arg, out, ep, path);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    dispatches_ = g.dispatch_count();
    ASSERT_TRUE(g.run().is_ok());
    const auto got = download_f32(rt(), out);

    double worst = 0;
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t o = 0; o < c.cout; ++o)
        for (int64_t y = 0; y < ho; ++y)
          for (int64_t x = 0; x < wo; ++x) {
            const int64_t sy = y / c.kh, i = y % c.kh, sx = x / c.kw, j = x % c.kw;
            double sum = 0, scale = 0;
            for (int64_t ci = 0; ci < c.cin; ++ci) {
              const double t =
                  double(hi[((b * c.cin + ci) * c.h + sy) * c.w + sx]) * hw[((ci * c.cout + o) * c.kh + i) * c.kw + j];
              sum += t;
              scale += std::abs(t);
            }
            if (c.bias) sum += hb[o], scale += std::abs(hb[o]);
            double want = c.act == Activation::kRelu ? std::max(sum, 0.0) : sum;
            const int64_t oi = ((b * c.cout + o) * ho + y) * wo + x;
            if (tr) want += hr[oi], scale += std::abs(hr[oi]);
            ASSERT_TRUE(std::isfinite(got[oi])) << "output " << b << "," << o << "," << y << "," << x << " unwritten";
            worst = std::max(worst, std::abs(got[oi] - want) / (scale + std::abs(want) + 1e-6));
          }
    EXPECT_LE(worst, d == DType::kF32 ? 1e-5 : 2e-3);
  }

  size_t dispatches_ = 0;
};

std::vector<Case> dpt_cases() {
  return {
      {1, 12, 5, 7, 10, 4, 4, true, Activation::kNone, false, "k=s=4 (act_postprocess.0)"},
      {2, 9, 6, 3, 6, 2, 2, true, Activation::kRelu, true, "k=s=2 (act_postprocess.1), batch 2, relu, residual"},
      {1, 5, 4, 3, 7, 2, 3, false, Activation::kNone, false, "2x3 kernel, no bias"},
  };
}

class ConvTranspose2dDtypeTest : public ConvTranspose2dTest, public ::testing::WithParamInterface<DType> {};

TEST_P(ConvTranspose2dDtypeTest, DptConfigurationsMatchFloat64) {
  uint32_t seed = 10;
  for (const Case& c : dpt_cases()) check(c, GetParam(), GemmPath::kScalar, seed += 10);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ConvTranspose2dDtypeTest, ::testing::Values(DType::kF32, DType::kF16),
                         DtypeParamName());

TEST_F(ConvTranspose2dTest, BatchesBeyondTheBindingLimitAreSplitIntoImages) {
  Capabilities caps = rt().caps();
  caps.max_storage_buffer_range = 8192;  // one 4×(6·4)×(5·4) f32 output image is 7680 bytes
  check({3, 6, 6, 5, 4, 4, 4, true, Activation::kNone, true, "k=s=4, 3 images"}, DType::kF32, GemmPath::kScalar, 100,
        &caps);
  EXPECT_EQ(dispatches_, 3u);
}

TEST_F(ConvTranspose2dTest, MisuseIsInvalidArgument) {
  auto t = [&](DType d, Shape s) { return Tensor::empty(rt(), d, s).value(); };
  const Capabilities& caps = rt().caps();
  Graph g(rt());
  Tensor in = t(DType::kF32, {1, 4, 3, 5}), w = t(DType::kF32, {4, 6, 2, 2}), out = t(DType::kF32, {1, 6, 6, 10});
  EXPECT_TRUE(ops::conv_transpose2d(g, caps, in, w, std::nullopt, out).is_ok());
  const size_t ok = g.dispatch_count();
  EXPECT_EQ(ops::conv_transpose2d(g, caps, in, t(DType::kF32, {6, 4, 2, 2}), std::nullopt, out).code(),
            StatusCode::kInvalidArgument);  // OIHW instead of (in, out, k, k)
  EXPECT_EQ(ops::conv_transpose2d(g, caps, in, w, std::nullopt, t(DType::kF32, {1, 6, 7, 11})).code(),
            StatusCode::kInvalidArgument);  // output of an overlapping transposed conv
  EXPECT_EQ(ops::conv_transpose2d(g, caps, in, t(DType::kF16, {4, 6, 2, 2}), std::nullopt, out).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::conv_transpose2d(g, caps, in, w, Arg(t(DType::kF32, {4})), out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::conv_transpose2d(g, caps, t(DType::kF32, {4, 3, 5}), w, std::nullopt, out).code(),
            StatusCode::kInvalidArgument);
  if (!ops::coopmat_gemm_available(caps)) {
    EXPECT_EQ(ops::conv_transpose2d(g, caps, in, w, std::nullopt, out, {}, GemmPath::kCoopMat).code(),
              StatusCode::kUnimplemented);  // no tensor cores
  }
  EXPECT_EQ(g.dispatch_count(), ok);
}

TEST_F(ConvTranspose2dTest, TensorCorePathMatchesFloat64) {
  if (!ops::coopmat_gemm_available(rt().caps())) {
    GTEST_SKIP() << "device has no VK_NV_cooperative_matrix 16x16x16 f16->f32 (lavapipe never does)";
  }
  // fp16 storage, and fp32 split into two fp16 parts (shaders/gemm_io.glsl).
  for (const DType dt : {DType::kF16, DType::kF32}) {
    SCOPED_TRACE(dtype_name(dt));
    uint32_t seed = 200;
    for (const Case& c : dpt_cases()) check(c, dt, GemmPath::kCoopMat, seed += 10);
    // 8-aligned rows (16-byte loads): 96 → 96 channels, k = s = 4 over 12×16 tokens.
    check({1, 96, 12, 16, 96, 4, 4, true, Activation::kNone, false, "k=s=4, DPT widths"}, dt, GemmPath::kCoopMat, 300);
  }
}

}  // namespace
}  // namespace recon::gpu
