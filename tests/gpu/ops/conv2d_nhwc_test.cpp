// conv2d_nhwc against a float64 CPU reference computed from the stored inputs: ResNet's
// convolutions at small, odd sizes (3×3 over maps whose width is not a multiple of 8, strided 3×3
// and 1×1, the 7×7 stem of 3 channels, 1×1 as a matmul), other kernels, bias, activations,
// residuals (also in place, and before the activation), batches split beyond the binding limit,
// the scalar path everywhere, its split over K and the tensor-core path where present, and misuse.
#include "gpu/ops/conv2d_nhwc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "bench/gpu/clock_warmup.h"
#include "gpu/ops/fast_divide.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/ops/activation_reference.h"
#include "tests/gpu/ops/conv_test_operands.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT
using ops::Activation;
using ops::GemmPath;

struct NhwcCase {
  std::string name;
  int64_t batch, h, w, cin, cout, kh, kw;
  ops::Conv2dParams params;
  Activation act = Activation::kNone;
  int residual = 0;  // 0 none, 1 separate, 2 the output itself
  bool residual_first = false;
  bool bias = true;
  ops::ConvInput input = ops::ConvInput::kChannelsLast;
};

NhwcCase nhwc(std::string name, int64_t b, int64_t h, int64_t w, int64_t cin, int64_t cout, int64_t kh, int64_t kw,
              int64_t stride, int64_t pad) {
  NhwcCase c{std::move(name), b, h, w, cin, cout, kh, kw};
  c.params.stride_h = c.params.stride_w = stride;
  c.params.pad_h = c.params.pad_w = pad;
  return c;
}

std::vector<NhwcCase> resnet_cases() {
  std::vector<NhwcCase> v;
  v.push_back(nhwc("3x3 pad 1 at 7x7, 16 channels (16-byte loads)", 2, 7, 7, 16, 24, 3, 3, 1, 1));
  v.back().act = Activation::kRelu, v.back().residual = 1, v.back().residual_first = true;
  v.push_back(nhwc("3x3 stride 2 pad 1, ragged 9x11", 2, 9, 11, 8, 13, 3, 3, 2, 1));
  v.back().act = Activation::kRelu;
  v.push_back(nhwc("1x1 (matmul), ReLU after the in-place residual", 3, 5, 6, 24, 16, 1, 1, 1, 0));
  v.back().act = Activation::kRelu, v.back().residual = 2, v.back().residual_first = true;
  v.push_back(nhwc("1x1 stride 2 (downsampling shortcut)", 2, 7, 9, 24, 32, 1, 1, 2, 0));
  v.back().bias = false;
  v.push_back(nhwc("7x7 stride 2 pad 3, 3 channels (element gathers)", 2, 19, 17, 3, 16, 7, 7, 2, 3));
  v.back().act = Activation::kRelu;
  v.push_back(nhwc("7x7 stride 2 pad 3 of a planar input (ResNet's stem)", 2, 19, 17, 3, 16, 7, 7, 2, 3));
  v.back().act = Activation::kRelu, v.back().input = ops::ConvInput::kPlanar;
  v.push_back(nhwc("1x1 of a planar input, 10 channels", 2, 5, 7, 10, 16, 1, 1, 1, 0));
  v.back().input = ops::ConvInput::kPlanar;
  v.push_back(nhwc("5x5 pad 2, 5 channels in, GELU, residual", 1, 8, 6, 5, 7, 5, 5, 1, 2));
  v.back().act = Activation::kGeluErf, v.back().residual = 1;
  v.push_back(nhwc("3x3 pad 1, 12 channels, sigmoid, in-place residual", 2, 6, 5, 12, 12, 3, 3, 1, 1));
  v.back().act = Activation::kSigmoid, v.back().residual = 2;
  return v;
}

class Conv2dNhwcTest : public recon::gpu::testing::GpuTest {
 protected:
  // |got − want| ≤ tol·(Σ|w·x| + |bias| + |r| + |want| + 1e-6) (conv2d_nhwc.h).
  void check(const NhwcCase& c, DType d, GemmPath path, uint32_t seed, const Capabilities* caps_override = nullptr) {
    SCOPED_TRACE(c.name + " " + dtype_name(d));
    const auto& p = c.params;
    const bool planar = c.input == ops::ConvInput::kPlanar;
    const Shape in_shape = planar ? Shape{c.batch, c.cin, c.h, c.w} : Shape{c.batch, c.h, c.w, c.cin};
    const Shape w_shape{c.cout, c.kh, c.kw, c.cin};
    Result<Shape> shape = ops::conv2d_nhwc_output_shape(in_shape, w_shape, p, c.input);
    ASSERT_TRUE(shape.is_ok()) << shape.status().to_string();
    const Shape out_shape = *shape;
    const int64_t ho = out_shape[1], wo = out_shape[2];
    const ConvOperands operands = conv_operands(rt(), d, in_shape, w_shape, out_shape, c.bias, c.residual, seed);
    const auto &hi = operands.host_in, &hw = operands.host_w, &hb = operands.host_bias, &hr = operands.host_residual;
    const bool tr = operands.residual.has_value();
    Graph g(rt());
    Status s =
        ops::conv2d_nhwc(g, caps_override ? *caps_override : rt().caps(), operands.in, operands.wt, operands.bias_arg(),
                         operands.out, p, operands.epilogue(c.act, c.residual_first), path, c.input);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    dispatches_ = g.dispatch_count();
    scratch_bytes_ = g.scratch_bytes();
    ASSERT_TRUE(g.run().is_ok());
    const auto got = download_f32(rt(), operands.out);

    double worst = 0;
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t y = 0; y < ho; ++y)
        for (int64_t x = 0; x < wo; ++x)
          for (int64_t o = 0; o < c.cout; ++o) {
            double sum = 0, scale = 0;
            for (int64_t i = 0; i < c.kh; ++i)
              for (int64_t j = 0; j < c.kw; ++j) {
                const int64_t iy = y * p.stride_h - p.pad_h + i, ix = x * p.stride_w - p.pad_w + j;
                if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                for (int64_t ci = 0; ci < c.cin; ++ci) {
                  const int64_t at =
                      planar ? ((b * c.cin + ci) * c.h + iy) * c.w + ix : ((b * c.h + iy) * c.w + ix) * c.cin + ci;
                  const double t = hi[at] * hw[((o * c.kh + i) * c.kw + j) * c.cin + ci];
                  sum += t;
                  scale += std::abs(t);
                }
              }
            if (c.bias) sum += hb[o], scale += std::abs(hb[o]);
            const int64_t oi = ((b * ho + y) * wo + x) * c.cout + o;
            const double r = tr ? hr[oi] : 0.0;
            const double want =
                tr && c.residual_first ? activation_reference(sum + r, c.act) : activation_reference(sum, c.act) + r;
            scale += std::abs(r);
            ASSERT_TRUE(std::isfinite(got[oi])) << "output " << b << "," << y << "," << x << "," << o << " unwritten";
            worst = std::max(worst, std::abs(got[oi] - want) / (scale + std::abs(want) + 1e-6));
          }
    EXPECT_LE(worst, d == DType::kF32 ? 1e-5 : 2e-3);
  }

  size_t dispatches_ = 0;
  uint64_t scratch_bytes_ = 0;
};

class Conv2dNhwcDtypeTest : public Conv2dNhwcTest, public ::testing::WithParamInterface<DType> {};

TEST_P(Conv2dNhwcDtypeTest, ResNetConfigurationsMatchFloat64) {
  uint32_t seed = 10;
  for (const NhwcCase& c : resnet_cases()) check(c, GetParam(), GemmPath::kScalar, seed += 10);
}

TEST_P(Conv2dNhwcDtypeTest, ScalarPathSplitsLongKOverWorkgroupsOnGpus) {
  // A device that reports its SM count (a GPU) splits small grids over K; lavapipe reports none.
  Capabilities caps = rt().caps();
  caps.shader_core_count = 132;
  NhwcCase a = nhwc("3x3 pad 1, 64 -> 40 channels at 6x7 (K 576)", 1, 6, 7, 64, 40, 3, 3, 1, 1);
  a.act = Activation::kRelu, a.residual = 1, a.residual_first = true;
  check(a, GetParam(), GemmPath::kScalar, 820, &caps);
  EXPECT_EQ(dispatches_, 1u);
  EXPECT_GT(scratch_bytes_, 0u) << "the shares' partial tiles in the graph's scratch";
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Conv2dNhwcDtypeTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

TEST_F(Conv2dNhwcTest, TensorCorePathMatchesFloat64) {
  if (!ops::coopmat_gemm_available(rt().caps())) {
    GTEST_SKIP() << "device has no VK_NV_cooperative_matrix 16x16x16 f16->f32 (lavapipe never does)";
  }
  for (const DType dt : {DType::kF16, DType::kF32}) {  // fp32 split into two fp16 parts
    SCOPED_TRACE(dtype_name(dt));
    uint32_t seed = 600;
    for (const NhwcCase& c : resnet_cases()) check(c, dt, GemmPath::kCoopMat, seed += 10);
    // Deep grids of whole and ragged tiles, as ResNet-50 runs them at batch 32.
    NhwcCase deep = nhwc("3x3 pad 1 at 14x14, 64 -> 72 channels, 12 images", 12, 14, 14, 64, 72, 3, 3, 1, 1);
    deep.act = Activation::kRelu;
    check(deep, dt, GemmPath::kCoopMat, 700);
    // K ≤ 512 over many tiles: 16 subgroups a tile (128×128, and 128×64 for K = 64 through the GEMM).
    NhwcCase wide = nhwc("3x3 pad 1 at 40x40, 32 -> 160 channels, 8 images", 8, 40, 40, 32, 160, 3, 3, 1, 1);
    wide.residual = 1, wide.act = Activation::kRelu, wide.residual_first = true;
    check(wide, dt, GemmPath::kCoopMat, 705);
    NhwcCase pointwise = nhwc("1x1 at 36x33, 64 -> 256 channels, 8 images", 8, 36, 33, 64, 256, 1, 1, 1, 0);
    pointwise.residual = 1, pointwise.act = Activation::kRelu, pointwise.residual_first = true;
    check(pointwise, dt, GemmPath::kCoopMat, 707);
    NhwcCase narrow = nhwc("3x3 pad 1 at 7x7, 40 -> 24 channels, 40 images", 40, 7, 7, 40, 24, 3, 3, 1, 1);
    narrow.residual = 1, narrow.act = Activation::kRelu, narrow.residual_first = true;
    check(narrow, dt, GemmPath::kCoopMat, 710);
    // One tile, K long enough to split.
    NhwcCase split = nhwc("3x3 pad 1 at 4x5, 256 -> 40 channels (K 2304)", 1, 4, 5, 256, 40, 3, 3, 1, 1);
    split.residual = 2, split.act = Activation::kRelu;
    check(split, dt, GemmPath::kCoopMat, 720);
    EXPECT_EQ(dispatches_, 1u);
    EXPECT_GT(scratch_bytes_, 0u) << "split over K";
  }
}

TEST_F(Conv2dNhwcTest, BatchesBeyondTheBindingLimitAreSplitIntoImages) {
  Capabilities caps = rt().caps();
  caps.max_storage_buffer_range = 8192;  // one 12×12×8 f32 image is 4608 bytes
  NhwcCase c = nhwc("3x3 pad 1, 3 images", 3, 12, 12, 8, 6, 3, 3, 1, 1);
  c.residual = 1;
  check(c, DType::kF32, GemmPath::kScalar, 500, &caps);
  EXPECT_EQ(dispatches_, 3u);
}

TEST_F(Conv2dNhwcTest, GridsBeyondTheDeviceLimitAreSplitIntoImages) {
  Capabilities caps = rt().caps();
  caps.max_workgroup_count[0] = 2;  // two tiles of 128 pixels (6 output channels): two 11×11 maps
  NhwcCase c = nhwc("3x3 pad 1, 5 images of 11x11", 5, 11, 11, 8, 6, 3, 3, 1, 1);
  c.residual = 1, c.act = Activation::kRelu;
  check(c, DType::kF32, GemmPath::kScalar, 530, &caps);
  EXPECT_EQ(dispatches_, 3u);
  caps.max_workgroup_count[0] = 1;  // not one 14×14 map
  Graph g(rt());
  Tensor in = Tensor::empty(rt(), DType::kF32, {1, 16, 16, 8}).value();
  Tensor w = Tensor::empty(rt(), DType::kF32, {6, 3, 3, 8}).value();
  Tensor out = Tensor::empty(rt(), DType::kF32, {1, 14, 14, 6}).value();
  EXPECT_EQ(ops::conv2d_nhwc(g, caps, in, w, std::nullopt, out, {}, {}, GemmPath::kScalar).code(),
            StatusCode::kInvalidArgument);
}

// The gather's divisions (gpu/ops/fast_divide.h) against the integer ones: every divisor up to 4096
// (convolutions' widths, planes and channel counts) and powers of two and their neighbours up to
// 2^31, with dividends at the ends of the range, near multiples of the divisor and random.
TEST(FastDivide, EqualsIntegerDivisionBelow2To31) {
  std::vector<uint32_t> divisors;
  for (uint32_t d = 1; d <= 4096; ++d) divisors.push_back(d);
  for (uint32_t s = 12; s <= 31; ++s) {
    for (int64_t d : {(int64_t{1} << s) - 1, int64_t{1} << s, (int64_t{1} << s) + 1, int64_t{3} << (s - 2)}) {
      divisors.push_back(static_cast<uint32_t>(d));
    }
  }
  uint64_t state = 12345;
  const auto next = [&] { return state = state * 6364136223846793005ULL + 1442695040888963407ULL; };
  constexpr uint32_t kMax = 0x7fffffff;
  for (uint32_t d : divisors) {
    const ops::FastDivisor f = ops::fast_divisor(d);
    std::vector<uint32_t> ns = {0, 1, d - 1, d, d + 1, kMax, kMax - 1, kMax / d * d, kMax / d * d - 1};
    for (int i = 0; i < 64; ++i) ns.push_back(static_cast<uint32_t>(next() >> 33));  // below 2^31
    for (int i = 0; i < 16; ++i) {
      const uint64_t q = (next() >> 33) % (uint64_t{kMax} / d + 1);
      for (int64_t n : {int64_t(q * d) - 1, int64_t(q * d), int64_t(q * d) + 1}) {
        if (n >= 0 && n <= kMax) ns.push_back(static_cast<uint32_t>(n));
      }
    }
    for (uint32_t n : ns) {
      if (n > kMax) continue;
      ASSERT_EQ(ops::fast_divide(n, f), n / d) << n << " / " << d;
    }
  }
}

TEST_F(Conv2dNhwcTest, MisuseIsInvalidArgument) {
  auto t = [&](DType d, Shape s) { return Tensor::empty(rt(), d, s).value(); };
  const Capabilities& caps = rt().caps();
  Graph g(rt());
  Tensor in = t(DType::kF32, {1, 8, 8, 4}), w = t(DType::kF32, {5, 3, 3, 4}), out = t(DType::kF32, {1, 6, 6, 5});
  EXPECT_TRUE(ops::conv2d_nhwc(g, caps, in, w, std::nullopt, out).is_ok());
  const size_t ok = g.dispatch_count();
  ops::Conv2dParams pad1;
  pad1.pad_h = pad1.pad_w = 1;
  EXPECT_EQ(ops::conv2d_nhwc(g, caps, in, w, std::nullopt, out, pad1).code(), StatusCode::kInvalidArgument);
  ops::Conv2dParams relu;
  relu.input_relu = true;
  EXPECT_EQ(ops::conv2d_nhwc(g, caps, in, w, std::nullopt, out, relu).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::conv2d_nhwc(g, caps, in, t(DType::kF32, {5, 3, 3, 3}), std::nullopt, out).code(),
            StatusCode::kInvalidArgument);  // Cin
  EXPECT_EQ(ops::conv2d_nhwc(g, caps, in, t(DType::kF16, {5, 3, 3, 4}), std::nullopt, out).code(),
            StatusCode::kInvalidArgument);  // dtype
  EXPECT_EQ(ops::conv2d_nhwc(g, caps, t(DType::kF32, {8, 8, 4}), w, std::nullopt, out).code(),
            StatusCode::kInvalidArgument);  // rank
  EXPECT_EQ(ops::conv2d_nhwc(g, caps, in, w, Arg(t(DType::kF32, {4})), out).code(), StatusCode::kInvalidArgument);
  ops::Epilogue bad_res;
  bad_res.residual = t(DType::kF32, {1, 6, 6, 4});
  EXPECT_EQ(ops::conv2d_nhwc(g, caps, in, w, std::nullopt, out, {}, bad_res).code(), StatusCode::kInvalidArgument);
  Tensor sq = t(DType::kF32, {1, 8, 8, 4});  // in place: the output overwrites the input
  EXPECT_EQ(ops::conv2d_nhwc(g, caps, sq, t(DType::kF32, {4, 1, 1, 4}), std::nullopt, sq).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), ok);
}

// ResNet-50's convolutions at batch 32, channels-last as the ONNX compiler runs them, under each
// tile of one GEMM core, with the model's epilogues (bias and ReLU; the residual on the expanding
// 1×1 ones), dispatched directly (opt-in: RECON_CONV_BENCH=1; RECON_CONV_SWEEP_CASES names the
// cases to run, comma-separated; RECON_CONV_TILES=BMxBNxBKxWMxWNxPREFETCHxSPLITS,... the tensor-core
// tiles). 1×1 convolutions of stride 1 run as the op runs them, a GEMM of
// the pixels by the transposed weights. The tensor-core sweep runs fp16, the scalar one fp32 (the
// precision that runs on it on GPUs). Push structs mirror Conv2dNhwcPush in
// gpu/ops/conv2d_nhwc.cpp and MatmulPush in gpu/ops/matmul.cpp.
struct NhwcBenchPush {
  uint32_t batch, h, w, cin, ho, wo, cout, k, off_in, off_w, off_out, off_r, off_bias, flags;
  uint32_t div_plane, div_wo, div_cin, div_shifts;
};
struct MatmulBenchPush {
  uint32_t m, n, k, lda, ldb, ldc, stride_a, stride_b, stride_c, off_a, off_b, off_c, off_r, off_bias;
  float alpha, beta;
  uint32_t flags, rope_cols, rope_tokens, rope_grid_w;
  float rope_base;
};
static_assert(sizeof(NhwcBenchPush) == 72 && sizeof(MatmulBenchPush) == 84, "mirror the ops' push constants");
constexpr uint32_t kMatmulFlagTransB = 0x400;  // GEMM_FLAG_TRANS_B (shaders/gemm_epilogue.glsl)

// One tile of the sweep: the core's specialisation constants 0..7 and a label.
struct SweepTile {
  std::array<uint32_t, 8> spec;
  std::string label;
};

class Conv2dNhwcSweepTest : public Conv2dNhwcTest {
 protected:
  void sweep(bool coopmat, const std::vector<SweepTile>& tiles) {
    const DType dtype = coopmat ? DType::kF16 : DType::kF32;
    constexpr uint32_t kBatch = 32;
    struct Case {
      const char* what;
      uint32_t cin, cout, h, w, kernel, stride;
      bool residual;
    };
    const Case cases[] = {
        {"stem 7x7/2", 3, 64, 224, 224, 7, 2, false},      {"l1 1x1 in", 64, 64, 56, 56, 1, 1, false},
        {"l1 1x1 in'", 256, 64, 56, 56, 1, 1, false},      {"l1 3x3", 64, 64, 56, 56, 3, 1, false},
        {"l1 1x1 out", 64, 256, 56, 56, 1, 1, true},       {"l2 1x1 in", 256, 128, 56, 56, 1, 1, false},
        {"l2 3x3/2", 128, 128, 56, 56, 3, 2, false},       {"l2 down 1x1/2", 256, 512, 56, 56, 1, 2, false},
        {"l2 1x1 in'", 512, 128, 28, 28, 1, 1, false},     {"l2 3x3", 128, 128, 28, 28, 3, 1, false},
        {"l2 1x1 out", 128, 512, 28, 28, 1, 1, true},      {"l3 3x3/2", 256, 256, 28, 28, 3, 2, false},
        {"l3 down 1x1/2", 512, 1024, 28, 28, 1, 2, false}, {"l3 1x1 in'", 1024, 256, 14, 14, 1, 1, false},
        {"l3 3x3", 256, 256, 14, 14, 3, 1, false},         {"l3 1x1 out", 256, 1024, 14, 14, 1, 1, true},
        {"l4 3x3/2", 512, 512, 14, 14, 3, 2, false},       {"l4 down 1x1/2", 1024, 2048, 14, 14, 1, 2, false},
        {"l4 1x1 in'", 2048, 512, 7, 7, 1, 1, false},      {"l4 3x3", 512, 512, 7, 7, 3, 1, false},
        {"l4 1x1 out", 512, 2048, 7, 7, 1, 1, true}};
    const char* only = std::getenv("RECON_CONV_SWEEP_CASES");
    for (const Case& c : cases) {
      if (only != nullptr &&
          ("," + std::string(only) + ",").find("," + std::string(c.what) + ",") == std::string::npos) {
        continue;
      }
      const uint32_t pad = c.kernel / 2, ho = (c.h + 2 * pad - c.kernel) / c.stride + 1;
      const uint32_t wo = (c.w + 2 * pad - c.kernel) / c.stride + 1, pixels = kBatch * ho * wo;
      const uint32_t k = c.cin * c.kernel * c.kernel;
      const bool planar = c.cin < 8;  // the stem reads the NCHW input
      Tensor in =
          upload_f32(rt(), dtype, {kBatch, c.h, c.w, c.cin}, random_floats(int64_t{kBatch} * c.cin * c.h * c.w, 1));
      Tensor wt = upload_f32(rt(), dtype, {c.cout, c.kernel, c.kernel, c.cin}, random_floats(int64_t{c.cout} * k, 2));
      Tensor bias = upload_f32(rt(), dtype, {c.cout}, random_floats(c.cout, 3));
      Tensor res = upload_f32(rt(), dtype, {kBatch, ho, wo, c.cout}, random_floats(int64_t{pixels} * c.cout, 4));
      Tensor out = Tensor::empty(rt(), dtype, {kBatch, ho, wo, c.cout}).value();
      Tensor partials = Tensor::zeros(rt(), DType::kF32, {int64_t{pixels + 256} * (c.cout + 128) * 3}).value();
      Tensor arrivals = Tensor::zeros(rt(), DType::kF32, {4096}).value();
      const bool gemm = c.kernel == 1 && c.stride == 1;
      const uint32_t flags =
          static_cast<uint32_t>(Activation::kRelu) | ops::kGemmFlagBias | (c.residual ? ops::kGemmFlagResidual : 0u);
      for (const SweepTile& t : tiles) {
        const uint32_t bm = t.spec[1], bn = t.spec[2], splits = t.spec[6];
        const std::array<uint32_t, 3> groups = {(pixels + bm - 1) / bm, (c.cout + bn - 1) / bn, splits};
        if (splits > 1 && groups[0] * groups[1] > 4096) continue;  // the arrival counters
        std::vector<uint32_t> spec(t.spec.begin(), t.spec.end());
        if (!coopmat) {  // the scalar core's 4-wide loads and stores as the ops set them
          spec[7] = (gemm || !planar ? ops::kGemmVecA : 0u) | ops::kGemmVecB | ops::kGemmVecC;
        }
        MatmulBenchPush gemm_push{};
        NhwcBenchPush conv_push{};
        if (gemm) {
          gemm_push.m = pixels, gemm_push.n = c.cout, gemm_push.k = c.cin, gemm_push.lda = c.cin;
          gemm_push.ldb = c.cin, gemm_push.ldc = c.cout, gemm_push.alpha = 1.0f, gemm_push.flags = flags;
          // TRANS_A, TRANS_B, VEC_A, VEC_B, VEC_C, ROPE, ALIGNED as the op sets them; the scalar
          // shader takes its transposes as flags.
          if (coopmat) spec.insert(spec.end(), {0, 1, 1, 1, 1, 0, 0});
          if (!coopmat) gemm_push.flags |= kMatmulFlagTransB;
        } else {
          // KH, KW, SH, SW, PH, PW, then VEC_A, VEC_B, VEC_OUT (tensor cores) and IN_PLANAR.
          spec.insert(spec.end(), {c.kernel, c.kernel, c.stride, c.stride, pad, pad});
          if (coopmat) spec.insert(spec.end(), {planar ? 0u : 1u, k % 8 == 0 ? 1u : 0u, 1u});
          spec.push_back(planar ? 1u : 0u);
          const ops::FastDivisor plane = ops::fast_divisor(ho * wo), row = ops::fast_divisor(wo),
                                 tap = ops::fast_divisor(c.cin);
          conv_push = {
              kBatch, c.h,   c.w,         c.cin,     ho,        wo,
              c.cout, k,     0,           0,         0,         0,
              0,      flags, plane.magic, row.magic, tap.magic, plane.shift | row.shift << 8 | tap.shift << 16};
        }
        std::string shader = gemm ? "matmul" : "conv2d_nhwc";
        shader += coopmat ? "_coopmat_f16" : splits > 1 ? "_split_f32" : "_f32";
        constexpr int kReps = 10;
        Graph g(rt());
        bool ok = true;
        for (int i = 0; i < kReps && ok; ++i) {
          const auto dispatch = [&](const auto& push) {
            return g.dispatch(shader, spec,
                              {{in, Access::kRead},
                               {wt, Access::kRead},
                               {out, Access::kWrite},
                               {bias, Access::kRead},
                               {res, Access::kRead},
                               {partials, Access::kReadWrite},
                               {arrivals, Access::kReadWrite}},
                              push, groups);
          };
          ok = (gemm ? dispatch(gemm_push) : dispatch(conv_push)).is_ok();
        }
        if (!ok) continue;  // shared memory beyond the device's limit
        // The clock first: each tile's pipeline compiles with the GPU idle, at its lowest clock.
        ASSERT_TRUE(bench::warm_up_clocks([&] { return g.run(); }, bench::clock_warmup_seconds(rt().caps())).is_ok());
        const double best = seconds_per_dispatch(g, kReps, 1);
        std::printf("[resnet nhwc %s] %-15s %4u->%4u %3ux%3u tile %s: %7.1f us %6.1f TFLOP/s\n", dtype_name(dtype),
                    c.what, c.cin, c.cout, ho, wo, t.label.c_str(), best * 1e6,
                    2.0 * pixels * c.cout * k / best * 1e-12);
        std::fflush(stdout);  // a sweep cut short by a time limit keeps what it measured
      }
    }
  }
};

// A sweep's tiles as RECON_CONV_TILES and RECON_CONV_SCALAR_TILES spell them: comma-separated, each
// up to 7 numbers joined by 'x', at least `required` of them; the numbers left out keep `fill`'s.
// A tile that does not parse is named in `bad`.
struct ListedTile {
  std::array<uint32_t, 7> v;
  std::string text;
};
std::vector<ListedTile> parse_tiles(const std::string& list, int required, const std::array<uint32_t, 7>& fill,
                                    std::string* bad) {
  std::vector<ListedTile> out;
  for (size_t at = 0; at < list.size();) {
    const size_t end = std::min(list.find(',', at), list.size());
    ListedTile t{fill, list.substr(at, end - at)};
    const int got = std::sscanf(t.text.c_str(), "%ux%ux%ux%ux%ux%ux%u", &t.v[0], &t.v[1], &t.v[2], &t.v[3], &t.v[4],
                                &t.v[5], &t.v[6]);
    if (got < required) {
      *bad = t.text;
      return {};
    }
    out.push_back(std::move(t));
    at = end + 1;
  }
  return out;
}

TEST_F(Conv2dNhwcSweepTest, ResNet50Batch32TileSweep) {
  if (std::getenv("RECON_CONV_BENCH") == nullptr) GTEST_SKIP() << "set RECON_CONV_BENCH=1 to run";
  if (!ops::coopmat_gemm_available(rt().caps())) GTEST_SKIP() << "no tensor cores";
  const uint32_t sg = rt().caps().subgroup_size;
  // BM x BN x BK x subgroups along M x along N x slices of loads in flight x K splits.
  std::string list =
      "128x128x32x2x4x2x1,128x128x16x2x4x2x1,128x128x16x2x4x1x1,128x64x16x4x2x2x1,128x64x32x4x2x2x1,"
      "64x128x16x2x4x2x1,64x64x16x2x2x2x1,64x64x32x2x2x2x1,256x64x16x4x2x2x1,128x128x16x2x4x2x2,"
      "128x128x32x2x4x2x2,128x128x16x2x4x2x3";
  if (const char* env = std::getenv("RECON_CONV_TILES")) list = env;
  std::string bad;
  const std::vector<ListedTile> listed = parse_tiles(list, 7, {}, &bad);
  ASSERT_TRUE(bad.empty()) << bad;
  std::vector<SweepTile> tiles;
  for (const ListedTile& t : listed) {
    const auto [bm, bn, bk, wm, wn, prefetch, splits] = t.v;
    tiles.push_back({{wm * wn * sg, bm, bn, bk, wm, wn, splits, prefetch}, t.text});
  }
  sweep(/*coopmat=*/true, tiles);
}

// The scalar core's tiles on the same convolutions in fp32 (opt-in like the above;
// RECON_CONV_SCALAR_TILES=BMxBNxBKxTMxTN[xSPLITS],... replaces the list).
TEST_F(Conv2dNhwcSweepTest, ResNet50Batch32ScalarTileSweep) {
  if (std::getenv("RECON_CONV_BENCH") == nullptr) GTEST_SKIP() << "set RECON_CONV_BENCH=1 to run";
  std::string list =
      "128x128x8x8x8,128x128x16x8x8,64x64x16x4x4,64x64x8x4x4,128x64x8x8x4,64x128x8x4x8,"
      "128x128x8x8x8x2,64x64x16x4x4x2";
  if (const char* env = std::getenv("RECON_CONV_SCALAR_TILES")) list = env;
  std::string bad;
  const std::vector<ListedTile> listed = parse_tiles(list, 5, {0, 0, 0, 0, 0, 1, 0}, &bad);
  ASSERT_TRUE(bad.empty()) << bad;
  std::vector<SweepTile> tiles;
  for (const ListedTile& t : listed) {
    const auto [bm, bn, bk, tm, tn, splits, unused] = t.v;
    tiles.push_back({{(bm / tm) * (bn / tn), bm, bn, bk, tm, tn, splits, 0}, t.text});
  }
  sweep(/*coopmat=*/false, tiles);
}

}  // namespace
}  // namespace recon::gpu
