// conv2d against a float64 CPU reference computed from the stored inputs, on MASt3R's DPT and
// patch-embedding configurations at small, odd sizes (1×1; 3×3 pad 1; 3×3 stride 2 pad 1;
// 16×16 stride 16), other kernels (5×5, rectangular with unequal strides and padding), bias,
// ReLU and the other activations, residual (also in place), relu on the input, batches, batch
// splitting beyond maxStorageBufferRange, weights stored tap by tap, the tensor-core path where
// present (also with its B rows read as 16-byte words), and misuse.
#include "gpu/ops/conv2d.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/ops/activation_reference.h"
#include "tests/gpu/ops/conv_test_operands.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT
using ops::Activation;
using ops::GemmPath;

struct Case {
  int64_t batch, cin, h, w, cout, kh, kw;
  ops::Conv2dParams params;
  bool bias = true;
  Activation act = Activation::kNone;
  int residual = 0;  // 0 none, 1 separate, 2 the output itself
  std::string name;
  bool residual_first = false;  // act(x + r): the residual before the activation
  ops::ConvWeightLayout layout = ops::ConvWeightLayout::kOIHW;
};

Case make(std::string name, int64_t b, int64_t cin, int64_t h, int64_t w, int64_t cout, int64_t kh, int64_t kw,
          int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
  Case c{b, cin, h, w, cout, kh, kw, {}, true, Activation::kNone, 0, std::move(name), false};
  c.params.stride_h = sh, c.params.stride_w = sw, c.params.pad_h = ph, c.params.pad_w = pw;
  return c;
}

// GpuTest shares one Runtime per process (validation on), so pipelines (up to a second each to
// create on lavapipe) are built once; each test still fails on any validation message it caused.
class Conv2dTest : public recon::gpu::testing::GpuTest {
 protected:
  // Runs one case; |got − want| ≤ tol·(Σ|w·x| + |bias| + |r| + |want| + 1e-6) (conv2d.h).
  void check(const Case& c, DType d, GemmPath path, uint32_t seed, const Capabilities* caps_override = nullptr) {
    SCOPED_TRACE(c.name + " " + dtype_name(d) + " act=" + ops::activation_name(c.act));
    const auto& p = c.params;
    const Shape in_shape{c.batch, c.cin, c.h, c.w}, w_shape{c.cout, c.cin, c.kh, c.kw};
    auto out_shape_r = ops::conv2d_output_shape(in_shape, w_shape, p);
    ASSERT_TRUE(out_shape_r.is_ok()) << out_shape_r.status().to_string();
    const Shape out_shape = out_shape_r.value();
    const int64_t ho = out_shape[2], wo = out_shape[3];
    ConvOperands operands = conv_operands(rt(), d, in_shape, w_shape, out_shape, c.bias, c.residual, seed);
    const auto &hi = operands.host_in, &hw = operands.host_w, &hb = operands.host_bias, &hr = operands.host_residual;
    const bool tr = operands.residual.has_value();

    if (c.layout == ops::ConvWeightLayout::kOHWI) {  // the same (rounded) values, stored tap by tap
      std::vector<float> ohwi(hw.size());
      for (int64_t o = 0; o < c.cout; ++o)
        for (int64_t ci = 0; ci < c.cin; ++ci)
          for (int64_t t = 0; t < c.kh * c.kw; ++t) {
            ohwi[(o * c.kh * c.kw + t) * c.cin + ci] = hw[(o * c.cin + ci) * c.kh * c.kw + t];
          }
      operands.wt = upload_f32(rt(), d, {c.cout, c.kh, c.kw, c.cin}, ohwi);
    }

    Graph g(rt());
    Status s =
        ops::conv2d(g, caps_override ? *caps_override : rt().caps(), operands.in, operands.wt, operands.bias_arg(),
                    operands.out, p, operands.epilogue(c.act, c.residual_first), path, c.layout);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    dispatches_ = g.dispatch_count();
    scratch_bytes_ = g.scratch_bytes();
    ASSERT_TRUE(g.run().is_ok());
    const auto got = download_f32(rt(), operands.out);

    double worst = 0;
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t o = 0; o < c.cout; ++o)
        for (int64_t y = 0; y < ho; ++y)
          for (int64_t x = 0; x < wo; ++x) {
            double sum = 0, scale = 0;
            for (int64_t ci = 0; ci < c.cin; ++ci)
              for (int64_t i = 0; i < c.kh; ++i)
                for (int64_t j = 0; j < c.kw; ++j) {
                  const int64_t iy = y * p.stride_h - p.pad_h + i, ix = x * p.stride_w - p.pad_w + j;
                  if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                  double v = hi[((b * c.cin + ci) * c.h + iy) * c.w + ix];
                  if (p.input_relu) v = std::max(v, 0.0);
                  const double t = v * hw[((o * c.cin + ci) * c.kh + i) * c.kw + j];
                  sum += t;
                  scale += std::abs(t);
                }
            if (c.bias) sum += hb[o], scale += std::abs(hb[o]);
            const int64_t oi = ((b * c.cout + o) * ho + y) * wo + x;
            double want = 0;
            if (tr && c.residual_first) {
              want = activation_reference(sum + hr[oi], c.act);
            } else {
              want = activation_reference(sum, c.act);
              if (tr) want += hr[oi];
            }
            if (tr) scale += std::abs(hr[oi]);
            ASSERT_TRUE(std::isfinite(got[oi])) << "output " << b << "," << o << "," << y << "," << x << " unwritten";
            worst = std::max(worst, std::abs(got[oi] - want) / (scale + std::abs(want) + 1e-6));
          }
    EXPECT_LE(worst, d == DType::kF32 ? 1e-5 : 2e-3);
  }

  size_t dispatches_ = 0;
  uint64_t scratch_bytes_ = 0;
};

// MASt3R's configurations at small, odd sizes, plus other kernels.
std::vector<Case> mast3r_cases() {
  std::vector<Case> v;
  v.push_back(make("1x1 (act_postprocess, out_conv, head.4)", 2, 24, 7, 9, 20, 1, 1, 1, 1, 0, 0));
  v.back().act = Activation::kRelu;
  v.push_back(make("3x3 pad 1 (layer_rn, RCU, head)", 1, 13, 11, 10, 17, 3, 3, 1, 1, 1, 1));
  v.back().act = Activation::kRelu, v.back().residual = 1;
  v.push_back(make("3x3 pad 1 on relu(x) + x (RCU conv2)", 2, 9, 7, 13, 9, 3, 3, 1, 1, 1, 1));
  v.back().params.input_relu = true, v.back().residual = 1, v.back().bias = false;
  v.push_back(make("3x3 stride 2 pad 1 (act_postprocess.3)", 2, 12, 11, 9, 10, 3, 3, 2, 2, 1, 1));
  v.push_back(make("16x16 stride 16 (patch_embed), ragged input", 1, 3, 50, 35, 40, 16, 16, 16, 16, 0, 0));
  v.push_back(make("5x5 pad 2, GELU", 1, 4, 9, 8, 6, 5, 5, 1, 1, 2, 2));
  v.back().act = Activation::kGeluErf;
  v.push_back(make("2x3 kernel, stride (2,1), pad (0,1), in-place residual", 1, 5, 9, 7, 3, 2, 3, 2, 1, 0, 1));
  v.back().residual = 2, v.back().act = Activation::kSigmoid;
  v.push_back(make("1x1 stride 2 (general path)", 1, 6, 9, 10, 5, 1, 1, 2, 2, 0, 0));
  v.back().bias = false;
  // ResNet's blocks: the ReLU after the shortcut, on the 3x3 path and on the 1x1 (matmul) path.
  v.push_back(make("3x3 pad 1, ReLU after the residual (ResNet)", 2, 7, 9, 11, 12, 3, 3, 1, 1, 1, 1));
  v.back().act = Activation::kRelu, v.back().residual = 1, v.back().residual_first = true;
  v.push_back(make("1x1, ReLU after the in-place residual (ResNet conv3)", 2, 16, 6, 8, 24, 1, 1, 1, 1, 0, 0));
  v.back().act = Activation::kRelu, v.back().residual = 2, v.back().residual_first = true;
  return v;
}

class Conv2dDtypeTest : public Conv2dTest, public ::testing::WithParamInterface<DType> {};

TEST_P(Conv2dDtypeTest, Mast3rConfigurationsMatchFloat64) {
  uint32_t seed = 10;
  for (const Case& c : mast3r_cases()) check(c, GetParam(), GemmPath::kScalar, seed += 10);
}

// K tap by tap: the weights stored [Cout, KH, KW, Cin].
TEST_P(Conv2dDtypeTest, TapMajorWeightsMatchFloat64) {
  uint32_t seed = 210;
  for (Case c : mast3r_cases()) {
    c.layout = ops::ConvWeightLayout::kOHWI;
    check(c, GetParam(), GemmPath::kScalar, seed += 10);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Conv2dDtypeTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

TEST_F(Conv2dTest, BatchesBeyondTheBindingLimitAreSplitIntoImages) {
  Capabilities caps = rt().caps();
  caps.max_storage_buffer_range = 8192;  // one 8×12×12 f32 image is 4608 bytes
  Case c = make("3x3 pad 1, 3 images", 3, 8, 12, 12, 6, 3, 3, 1, 1, 1, 1);
  c.residual = 1;
  check(c, DType::kF32, GemmPath::kScalar, 500, &caps);
  EXPECT_EQ(dispatches_, 3u);
  Case pw = make("1x1, 3 images (matmul route)", 3, 8, 12, 12, 6, 1, 1, 1, 1, 0, 0);
  check(pw, DType::kF32, GemmPath::kScalar, 510, &caps);
  EXPECT_GT(dispatches_, 1u);
}

TEST_F(Conv2dTest, MisuseIsInvalidArgument) {
  auto t = [&](DType d, Shape s) { return Tensor::empty(rt(), d, s).value(); };
  const Capabilities& caps = rt().caps();
  Graph g(rt());
  Tensor in = t(DType::kF32, {1, 4, 8, 8}), w = t(DType::kF32, {5, 4, 3, 3}), out = t(DType::kF32, {1, 5, 6, 6});
  EXPECT_TRUE(ops::conv2d(g, caps, in, w, std::nullopt, out).is_ok());
  const size_t ok = g.dispatch_count();
  ops::Conv2dParams pad1;
  pad1.pad_h = pad1.pad_w = 1;
  EXPECT_EQ(ops::conv2d(g, caps, in, w, std::nullopt, out, pad1).code(), StatusCode::kInvalidArgument);  // 8x8 out
  ops::Epilogue rope;  // the RoPE epilogue is for linear layers
  rope.rope = ops::RopeEpilogue{{6, 6}, 1, 4};
  EXPECT_EQ(ops::conv2d(g, caps, in, w, std::nullopt, out, {}, rope).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::conv2d(g, caps, in, t(DType::kF32, {5, 3, 3, 3}), std::nullopt, out).code(),
            StatusCode::kInvalidArgument);  // Cin
  EXPECT_EQ(ops::conv2d(g, caps, in, t(DType::kF16, {5, 4, 3, 3}), std::nullopt, out).code(),
            StatusCode::kInvalidArgument);  // dtype
  EXPECT_EQ(
      ops::conv2d(g, caps, in, w, std::nullopt, out, {}, {}, GemmPath::kAuto, ops::ConvWeightLayout::kOHWI).code(),
      StatusCode::kInvalidArgument);  // [5, 4, 3, 3] read as [Cout, KH, KW, Cin] takes 3 channels
  EXPECT_EQ(ops::conv2d(g, caps, t(DType::kF32, {4, 8, 8}), w, std::nullopt, out).code(),
            StatusCode::kInvalidArgument);  // rank
  EXPECT_EQ(ops::conv2d(g, caps, in, w, Arg(t(DType::kF32, {4})), out).code(), StatusCode::kInvalidArgument);
  ops::Conv2dParams zero_stride;
  zero_stride.stride_h = 0;
  EXPECT_EQ(ops::conv2d(g, caps, in, w, std::nullopt, out, zero_stride).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::conv2d(g, caps, t(DType::kF32, {1, 4, 2, 2}), w, std::nullopt, out).code(),
            StatusCode::kInvalidArgument);  // kernel larger than the input
  ops::Epilogue bad_res;
  bad_res.residual = t(DType::kF32, {1, 5, 6, 7});
  EXPECT_EQ(ops::conv2d(g, caps, in, w, std::nullopt, out, {}, bad_res).code(), StatusCode::kInvalidArgument);
  Tensor sq = t(DType::kF32, {1, 4, 8, 8});  // in place: the output overwrites the input
  EXPECT_EQ(ops::conv2d(g, caps, sq, t(DType::kF32, {4, 4, 1, 1}), std::nullopt, sq).code(),
            StatusCode::kInvalidArgument);
  if (!ops::coopmat_gemm_available(caps)) {
    EXPECT_EQ(ops::conv2d(g, caps, in, w, std::nullopt, out, {}, {}, GemmPath::kCoopMat).code(),
              StatusCode::kUnimplemented);  // no tensor cores
  }
  EXPECT_EQ(g.dispatch_count(), ok);
}

TEST_F(Conv2dTest, TensorCorePathMatchesFloat64) {
  if (!ops::coopmat_gemm_available(rt().caps())) {
    GTEST_SKIP() << "device has no VK_NV_cooperative_matrix 16x16x16 f16->f32 (lavapipe never does)";
  }
  // fp16 storage, and fp32 split into two fp16 parts (shaders/gemm_io.glsl).
  for (const DType dt : {DType::kF16, DType::kF32}) {
    SCOPED_TRACE(dtype_name(dt));
    uint32_t seed = 600;
    for (const Case& c : mast3r_cases()) check(c, dt, GemmPath::kCoopMat, seed += 10);
    // DPT head.2-like: 128→128 3×3 over a larger image (8-aligned K, many tiles).
    Case big = make("3x3 pad 1, 64 channels, 40x52", 1, 64, 40, 52, 64, 3, 3, 1, 1, 1, 1);
    big.act = Activation::kRelu;
    check(big, dt, GemmPath::kCoopMat, 700);
    // Widths of whole 16-byte words: B rows are read as words, moved by one element for the outer
    // kernel columns, with the padding at the rows' ends and above and below the image.
    std::vector<Case> words;
    words.push_back(make("3x3 pad 1 on relu(x), width 16, K 117", 2, 13, 5, 16, 17, 3, 3, 1, 1, 1, 1));
    words.back().params.input_relu = true, words.back().residual = 1, words.back().bias = false;
    words.push_back(make("3x3 pad 1, 64 channels, 40x48", 1, 64, 40, 48, 64, 3, 3, 1, 1, 1, 1));
    words.back().act = Activation::kRelu;
    words.push_back(make("3x3 stride (2,1) pad 1, width 8", 3, 6, 9, 8, 5, 3, 3, 2, 1, 1, 1));
    words.back().act = Activation::kGeluErf;
    words.push_back(make("1x1 on relu(x), width 24", 2, 10, 3, 24, 7, 1, 1, 1, 1, 0, 0));
    words.back().params.input_relu = true;
    // Whole 64×64×32 tiles (K 288, 128 pixels, 64 channels).
    words.push_back(make("3x3 pad 1 on relu(x), whole tiles", 2, 32, 8, 16, 64, 3, 3, 1, 1, 1, 1));
    words.back().params.input_relu = true, words.back().residual = 1;
    // K tap by tap, with Cin a multiple of 16 (one tap per slice, as the model runs it) and not.
    words.push_back(make("3x3 pad 1, whole tiles, K tap by tap", 2, 32, 8, 16, 64, 3, 3, 1, 1, 1, 1));
    words.back().params.input_relu = true, words.back().residual = 1;
    words.back().layout = ops::ConvWeightLayout::kOHWI;
    words.push_back(make("3x3 pad 1, 48 channels, 24x40, K tap by tap", 1, 48, 24, 40, 40, 3, 3, 1, 1, 1, 1));
    words.back().act = Activation::kRelu, words.back().layout = ops::ConvWeightLayout::kOHWI;
    words.push_back(make("3x3 pad 1, 13 channels, K tap by tap", 2, 13, 5, 16, 17, 3, 3, 1, 1, 1, 1));
    words.back().layout = ops::ConvWeightLayout::kOHWI;
    for (const Case& c : words) {
      ASSERT_TRUE(ops::conv2d_b_in_words(c.w, c.kw, c.params)) << c.name;
      check(c, dt, GemmPath::kCoopMat, seed += 10);
    }
    for (Case c : mast3r_cases()) {  // element gathers, K tap by tap
      c.layout = ops::ConvWeightLayout::kOHWI;
      check(c, dt, GemmPath::kCoopMat, seed += 10);
    }
  }
}

// The half-size tiles of deep batches (matmul.cpp, choose_gemm_tiling; GemmTiling.
// NarrowProblemsTakeHalfTiles): 64×64 for few output channels, 128×64 for small maps (BK = 32 for
// K ≥ 2048), as ResNet-50 runs them at batch 32, with ragged edges on every side.
TEST_F(Conv2dTest, TensorCoreHalfTilesOfDeepBatchesMatchFloat64) {
  if (!ops::coopmat_gemm_available(rt().caps())) {
    GTEST_SKIP() << "device has no VK_NV_cooperative_matrix 16x16x16 f16->f32 (lavapipe never does)";
  }
  std::vector<Case> cases;
  cases.push_back(make("3x3, 40 channels out: 64x64 tiles", 64, 8, 8, 16, 40, 3, 3, 1, 1, 1, 1));
  cases.back().act = Activation::kRelu, cases.back().residual = 1;
  cases.push_back(make("1x1, 48 channels out: 64x64 tiles", 64, 24, 16, 15, 48, 1, 1, 1, 1, 0, 0));
  cases.back().act = Activation::kRelu, cases.back().residual = 1;
  cases.push_back(make("1x1 at 7x7, K 136: 128x64 tiles", 32, 136, 7, 7, 130, 1, 1, 1, 1, 0, 0));
  cases.back().act = Activation::kRelu, cases.back().residual = 1;
  cases.push_back(make("3x3 at 7x7, K 2088: 128x64 tiles, BK 32", 64, 232, 7, 7, 100, 3, 3, 1, 1, 1, 1));
  cases.back().act = Activation::kRelu;
  cases.push_back(make("7x7 stride 2, 3 channels in: 64x64 tiles", 32, 3, 40, 38, 24, 7, 7, 2, 2, 3, 3));
  uint32_t seed = 900;
  for (const Case& c : cases) check(c, DType::kF16, GemmPath::kCoopMat, seed += 10);
}

TEST(Conv2dPreferredLayout, TapByTapOnTensorCoresForManyTapsOfWholeSlices) {
  Capabilities caps;
  EXPECT_EQ(ops::conv2d_preferred_layout(caps, {128, 128, 3, 3}), ops::ConvWeightLayout::kOIHW);  // no coopmat
  caps.nv_cooperative_matrix = caps.storage_16bit = caps.shader_float16 = true;
  caps.subgroup_size = 32;
  caps.max_workgroup_invocations = 1024;
  caps.max_compute_shared_memory = 49152;
  caps.coopmat_shapes.push_back({16, 16, 16, "f16", "f16", "f32", "f32", "NV subgroup"});
  ASSERT_TRUE(ops::coopmat_gemm_available(caps)) << "update the capabilities this test sets";
  EXPECT_EQ(ops::conv2d_preferred_layout(caps, {128, 128, 3, 3}), ops::ConvWeightLayout::kOHWI);
  EXPECT_EQ(ops::conv2d_preferred_layout(caps, {256, 96, 3, 3}), ops::ConvWeightLayout::kOHWI);
  EXPECT_EQ(ops::conv2d_preferred_layout(caps, {256, 24, 3, 3}), ops::ConvWeightLayout::kOIHW);    // Cin % 16
  EXPECT_EQ(ops::conv2d_preferred_layout(caps, {1024, 3, 16, 16}), ops::ConvWeightLayout::kOIHW);  // patch_embed
  EXPECT_EQ(ops::conv2d_preferred_layout(caps, {4, 128, 1, 1}), ops::ConvWeightLayout::kOIHW);     // one tap
}

TEST(Conv2dBInWords, OnlyUnitStrideAlongXWithinOneElementAndWholeWords) {
  ops::Conv2dParams same;
  same.pad_h = same.pad_w = 1;
  EXPECT_TRUE(ops::conv2d_b_in_words(512, 3, same));
  EXPECT_TRUE(ops::conv2d_b_in_words(8, 3, same));
  EXPECT_FALSE(ops::conv2d_b_in_words(52, 3, same)) << "rows not of whole words";
  ops::Conv2dParams tall = same;
  tall.stride_h = 2;
  EXPECT_TRUE(ops::conv2d_b_in_words(64, 3, tall)) << "the stride along y does not matter";
  ops::Conv2dParams wide = same;
  wide.stride_w = 2;
  EXPECT_FALSE(ops::conv2d_b_in_words(64, 3, wide));
  EXPECT_FALSE(ops::conv2d_b_in_words(64, 5, same)) << "5 wide: shifts of two elements";
  ops::Conv2dParams unpadded;
  EXPECT_TRUE(ops::conv2d_b_in_words(64, 1, unpadded));
  EXPECT_FALSE(ops::conv2d_b_in_words(64, 3, unpadded)) << "the width would shrink";
  EXPECT_FALSE(ops::conv2d_b_in_words(64, 16, unpadded));
}

TEST(Conv2dPointwiseFew, FewOutputChannelsOfWholeWordPlanesOnly) {
  const ops::Conv2dParams unit;
  EXPECT_TRUE(ops::conv2d_pointwise_few({8, 128, 384, 512}, {4, 128, 1, 1}, DType::kF16, unit, false)) << "head.4";
  EXPECT_TRUE(ops::conv2d_pointwise_few({1, 3, 2, 4}, {16, 3, 1, 1}, DType::kF16, unit, false));
  EXPECT_FALSE(ops::conv2d_pointwise_few({1, 3, 2, 4}, {17, 3, 1, 1}, DType::kF16, unit, false));
  EXPECT_TRUE(ops::conv2d_pointwise_few({1, 3, 1, 4}, {2, 3, 1, 1}, DType::kF32, unit, false)) << "4 floats a word";
  EXPECT_FALSE(ops::conv2d_pointwise_few({1, 3, 1, 4}, {2, 3, 1, 1}, DType::kF16, unit, false)) << "8 halves a word";
  EXPECT_FALSE(ops::conv2d_pointwise_few({1, 3, 2, 4}, {4, 3, 1, 1}, DType::kF16, unit, true)) << "residual";
  EXPECT_FALSE(ops::conv2d_pointwise_few({1, 3, 6, 6}, {4, 3, 3, 3}, DType::kF16, unit, false)) << "3x3";
  ops::Conv2dParams relu;
  relu.input_relu = true;
  EXPECT_FALSE(ops::conv2d_pointwise_few({1, 3, 2, 4}, {4, 3, 1, 1}, DType::kF16, relu, false));
  ops::Conv2dParams strided;
  strided.stride_h = strided.stride_w = 2;
  EXPECT_FALSE(ops::conv2d_pointwise_few({1, 3, 4, 8}, {4, 3, 1, 1}, DType::kF16, strided, false));
}

// The automatic path of 1×1 convolutions with few output channels (conv2d_pointwise_few) on every
// device, next to shapes it leaves to the GEMM (17 channels, partial-word planes, a residual).
TEST_F(Conv2dTest, PointwiseFewOutputChannelsMatchFloat64) {
  std::vector<Case> v;
  v.push_back(make("1x1 128 -> 4 (head.4), 2 images", 2, 128, 12, 16, 4, 1, 1, 1, 1, 0, 0));
  v.push_back(make("1x1 5 -> 1, relu, no bias", 3, 5, 4, 6, 1, 1, 1, 1, 1, 0, 0));
  v.back().act = Activation::kRelu, v.back().bias = false;
  v.push_back(make("1x1 7 -> 16, GELU", 1, 7, 2, 8, 16, 1, 1, 1, 1, 0, 0));
  v.back().act = Activation::kGeluErf;
  v.push_back(make("1x1 7 -> 17 (GEMM)", 1, 7, 2, 8, 17, 1, 1, 1, 1, 0, 0));
  v.push_back(make("1x1 6 -> 4 on a 3x5 plane (GEMM)", 2, 6, 3, 5, 4, 1, 1, 1, 1, 0, 0));
  v.push_back(make("1x1 6 -> 4 + residual (GEMM)", 2, 6, 4, 8, 4, 1, 1, 1, 1, 0, 0));
  v.back().residual = 1, v.back().act = Activation::kSigmoid;
  uint32_t seed = 700;
  for (DType d : {DType::kF32, DType::kF16}) {
    for (const Case& c : v) check(c, d, GemmPath::kAuto, seed += 10);
  }
}

TEST_P(Conv2dDtypeTest, ScalarPathSplitsLongKOverWorkgroupsOnGpus) {
  // A device that reports its SM count (a GPU) splits small grids of scalar tiles over K; lavapipe
  // reports none, so the caps here claim 132. ResNet-50's 3x3 convolutions at 7x7 are the case.
  Capabilities caps = rt().caps();
  caps.shader_core_count = 132;
  Case a = make("3x3 pad 1, 64 -> 40 channels at 6x7 (K 576)", 1, 64, 6, 7, 40, 3, 3, 1, 1, 1, 1);
  a.act = Activation::kRelu, a.residual = 1;
  check(a, GetParam(), GemmPath::kScalar, 820, &caps);
  EXPECT_EQ(dispatches_, 1u) << "one split dispatch; the counters come zeroed";
  EXPECT_GT(scratch_bytes_, 0u) << "the shares' partial tiles in the graph's scratch";
  Case b = make("3x3 stride 2, 2 images, 50 -> 30 channels (K 450), in place", 2, 50, 11, 13, 30, 3, 3, 2, 2, 1, 1);
  b.residual = 2, b.act = Activation::kGeluErf;
  check(b, GetParam(), GemmPath::kScalar, 830, &caps);
  EXPECT_GT(scratch_bytes_, 0u);
}

TEST_F(Conv2dTest, TensorCorePathSplitsLongKOverWorkgroups) {
  if (!ops::coopmat_gemm_available(rt().caps())) {
    GTEST_SKIP() << "device has no VK_NV_cooperative_matrix 16x16x16 f16->f32 (lavapipe never does)";
  }
  // fp16 storage, and fp32 split into two fp16 parts (shaders/gemm_io.glsl).
  for (const DType dt : {DType::kF16, DType::kF32}) {
    SCOPED_TRACE(dtype_name(dt));
    // DPT layer4_rn-like: few output pixels and channels (one or two tiles), long K = Cin·9; the
    // second has K slices that do not divide evenly among the shares.
    Case a = make("3x3 pad 1, 256 -> 40 channels at 6x8 (K 2304)", 1, 256, 6, 8, 40, 3, 3, 1, 1, 1, 1);
    a.act = Activation::kRelu, a.residual = 1;
    check(a, dt, GemmPath::kCoopMat, 800);
    EXPECT_EQ(dispatches_, 1u) << "one split dispatch; the counters come zeroed";
    EXPECT_GT(scratch_bytes_, 0u);
    Case b = make("3x3 stride 2, 2 images, 200 -> 70 channels (K 1800)", 2, 200, 11, 13, 70, 3, 3, 2, 2, 1, 1);
    b.residual = 2, b.act = Activation::kGeluErf;
    check(b, dt, GemmPath::kCoopMat, 810);
    EXPECT_GT(scratch_bytes_, 0u);
  }
}

// The tensor-core convolution's tiles at the DPT head's shapes, dispatched directly (opt-in:
// RECON_CONV_BENCH=1; the push struct mirrors shaders/conv2d_coopmat.comp). Repetitions write the
// same output, one after the other.
struct ConvBenchPush {
  uint32_t cin, h, w, cout, ho, wo, k, stride_in, stride_out, off_in, off_w, off_out, off_r, off_bias, flags;
};

TEST_F(Conv2dTest, CoopMatTileSweep) {
  if (std::getenv("RECON_CONV_BENCH") == nullptr) GTEST_SKIP() << "set RECON_CONV_BENCH=1 to run";
  if (!ops::coopmat_gemm_available(rt().caps())) GTEST_SKIP() << "no tensor cores";
  const uint32_t sg = rt().caps().subgroup_size;
  struct Tile {
    uint32_t bm, bn, bk, wm, wn, prefetch, b_words, tap_major;
  };
  // The first four at BK = 16 step from element gathers to the model's tile (words, two slices in
  // flight, K ordered tap by tap: ConvWeightLayout::kOHWI).
  const Tile tiles[] = {{128, 128, 16, 2, 4, 2, 0, 0}, {128, 128, 16, 2, 4, 1, 1, 0}, {128, 128, 16, 2, 4, 2, 1, 0},
                        {128, 128, 16, 2, 4, 2, 1, 1}, {128, 128, 32, 2, 4, 2, 1, 1}, {64, 64, 16, 2, 2, 2, 1, 0},
                        {64, 64, 16, 2, 2, 2, 1, 1}};
  struct Case {
    const char* what;
    uint32_t cin, cout, h, w, batch;
  };
  const Case cases[] = {
      {"head.2 3x3 full res", 128, 128, 384, 512, 1},  {"head.2 3x3 full res", 128, 128, 384, 512, 8},
      {"head.0 3x3 1/2 res", 256, 128, 192, 256, 1},   {"head.0 3x3 1/2 res", 256, 128, 192, 256, 8},
      {"refinenet RCU 1/4 res", 256, 256, 96, 128, 8}, {"refinenet RCU 1/4 res", 256, 256, 96, 128, 1},
      {"refinenet RCU 1/8 res", 256, 256, 48, 64, 1},  {"refinenet RCU 1/8 res", 256, 256, 48, 64, 8},
      {"refinenet RCU 1/16 res", 256, 256, 24, 32, 1}, {"refinenet RCU 1/16 res", 256, 256, 24, 32, 8},
      {"layer2_rn 1/8 res", 192, 256, 48, 64, 8},      {"layer4_rn 1/32 res", 768, 256, 12, 16, 8}};
  for (const Case& c : cases) {
    const uint32_t k = c.cin * 9, npix = c.h * c.w;
    const int64_t images = c.batch;
    Tensor in = upload_f32(rt(), DType::kF16, {images, c.cin, c.h, c.w}, random_floats(images * c.cin * npix, 1));
    Tensor wt = upload_f32(rt(), DType::kF16, {c.cout, c.cin, 3, 3}, random_floats(int64_t{c.cout} * k, 2));
    Tensor out = Tensor::empty(rt(), DType::kF16, {images, c.cout, c.h, c.w}).value();
    for (const Tile& t : tiles) {
      // The GEMM core's constants (gemm_coopmat.glsl), then KH, KW, SH, SW, PH, PW, VEC_A, VEC_OUT, VEC_B,
      // TAP_CIN.
      std::vector<uint32_t> spec = {t.wm * t.wn * sg, t.bm, t.bn, t.bk, t.wm, t.wn, 1, t.prefetch};
      spec.insert(spec.end(), {3, 3, 1, 1, 1, 1, k % 8 == 0 ? 1u : 0u, npix % 8 == 0 ? 1u : 0u, t.b_words,
                               t.tap_major ? c.cin : 0u});
      const ConvBenchPush push{c.cin, c.h, c.w, c.cout, c.h, c.w, k, c.cin * npix, c.cout * npix, 0, 0, 0, 0, 0, 0};
      constexpr int kReps = 10;
      Graph g(rt());
      bool ok = true;
      for (int i = 0; i < kReps && ok; ++i) {
        ok = g.dispatch("conv2d_coopmat_f16", spec,
                        {{in, Access::kRead},
                         {wt, Access::kRead},
                         {out, Access::kWrite},
                         {wt, Access::kRead},
                         {wt, Access::kRead},
                         {wt, Access::kRead},
                         {wt, Access::kRead}},
                        push, {(c.cout + t.bm - 1) / t.bm, (npix + t.bn - 1) / t.bn, c.batch})
                 .is_ok();
      }
      if (!ok) continue;  // shared memory beyond the device's limit
      const double best = seconds_per_dispatch(g, kReps);
      std::printf("[sweep] conv %-23s batch %u tile %3ux%3ux%2u pf %u B %s K %s: %7.1f us  %6.1f TFLOP/s\n", c.what,
                  c.batch, t.bm, t.bn, t.bk, t.prefetch, t.b_words ? "words" : "elems",
                  t.tap_major ? "(ky,kx,c)" : "(c,ky,kx)", best * 1e6,
                  2.0 * c.batch * c.cout * k * npix / best * 1e-12);
    }
  }
}

}  // namespace
}  // namespace recon::gpu
