// Grouped, depthwise and dilated convolutions with asymmetric padding against a float64 loop over
// the ONNX definition; bias and no bias; misuse.
#include "gpu/ops/conv2d_grouped.h"

#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

class Conv2dGroupedTest : public GpuTest, public ::testing::WithParamInterface<DType> {
 protected:
  void check(const Shape& s, int64_t cout, int64_t kh, int64_t kw, const ops::Conv2dGroupedParams& p, bool with_bias,
             uint32_t seed) {
    const DType d = GetParam();
    const Shape ws{cout, s[1] / p.groups, kh, kw};
    auto shape = ops::conv2d_grouped_output_shape(s, ws, p);
    ASSERT_TRUE(shape.is_ok()) << shape.status().to_string();
    const Shape o = *shape;
    Tensor x = upload_f32(rt(), d, s, random_floats(shape_numel(s), seed));
    Tensor w = upload_f32(rt(), d, ws, random_floats(shape_numel(ws), seed + 1));
    Tensor b = upload_f32(rt(), d, {cout}, random_floats(static_cast<size_t>(cout), seed + 2));
    Tensor out = poisoned(rt(), d, o);
    Graph g(rt());
    Status st = ops::conv2d_grouped(g, x, w, with_bias ? std::optional<Arg>(b) : std::nullopt, out, p);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_TRUE(g.run().is_ok());
    const auto xv = download_f32(rt(), x), wv = download_f32(rt(), w), bv = download_f32(rt(), b);
    const auto got = download_f32(rt(), out);
    const int64_t cin_g = s[1] / p.groups, cout_g = cout / p.groups;
    double worst = 0;
    for (int64_t n = 0; n < o[0]; ++n)
      for (int64_t oc = 0; oc < cout; ++oc)
        for (int64_t y = 0; y < o[2]; ++y)
          for (int64_t xx = 0; xx < o[3]; ++xx) {
            double acc = with_bias ? bv[static_cast<size_t>(oc)] : 0.0;
            double mag = std::abs(acc) + 1e-6;
            for (int64_t c = 0; c < cin_g; ++c)
              for (int64_t i = 0; i < kh; ++i)
                for (int64_t j = 0; j < kw; ++j) {
                  const int64_t iy = y * p.stride_h - p.pad_top + i * p.dilation_h;
                  const int64_t ix = xx * p.stride_w - p.pad_left + j * p.dilation_w;
                  if (iy < 0 || iy >= s[2] || ix < 0 || ix >= s[3]) continue;
                  const int64_t ic = (oc / cout_g) * cin_g + c;
                  const double t = double(wv[static_cast<size_t>(((oc * cin_g + c) * kh + i) * kw + j)]) *
                                   xv[static_cast<size_t>(((n * s[1] + ic) * s[2] + iy) * s[3] + ix)];
                  acc += t;
                  mag += std::abs(t);
                }
            const float g_v = got[static_cast<size_t>(((n * cout + oc) * o[2] + y) * o[3] + xx)];
            ASSERT_TRUE(std::isfinite(g_v)) << "unwritten output";
            worst = std::max(worst, std::abs(g_v - acc) / mag);
          }
    EXPECT_LE(worst, d == DType::kF32 ? 1e-5 : 2e-3)
        << shape_string(s) << " groups " << p.groups << " kernel " << kh << "x" << kw;
  }
};

TEST_P(Conv2dGroupedTest, DepthwiseAndGroupedMatchTheDefinition) {
  // Depthwise 3×3, stride 1 and 2, padding 1 (MobileNet's blocks).
  check({2, 8, 9, 11}, 8, 3, 3, {8, 1, 1, 1, 1, 1, 1, 1, 1}, true, 1);
  check({1, 6, 10, 7}, 6, 3, 3, {6, 2, 2, 1, 1, 1, 1, 1, 1}, false, 2);
  // Depthwise with a channel multiplier, and 4 groups of 3 → 2 channels.
  check({1, 4, 8, 8}, 8, 5, 5, {4, 1, 1, 1, 1, 2, 2, 2, 2}, true, 3);
  check({2, 12, 7, 9}, 8, 3, 1, {4, 1, 2, 1, 1, 1, 0, 1, 0}, true, 4);
}

TEST_P(Conv2dGroupedTest, DilationAndAsymmetricPadding) {
  check({1, 3, 13, 12}, 5, 3, 3, {1, 1, 1, 2, 3, 2, 3, 2, 3}, true, 10);
  check({2, 4, 9, 9}, 4, 3, 2, {2, 2, 1, 2, 1, 0, 1, 1, 0}, false, 11);
  check({1, 2, 5, 6}, 3, 2, 2, {1, 1, 1, 1, 1, 1, 0, 0, 1}, true, 12);  // SAME_UPPER-like
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Conv2dGroupedTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class Conv2dGroupedMiscTest : public GpuTest {};

TEST_F(Conv2dGroupedMiscTest, MisuseIsRefused) {
  auto t = [&](const Shape& s) { return Tensor::empty(rt(), DType::kF32, s).value(); };
  Graph g(rt());
  ops::Conv2dGroupedParams p;
  p.groups = 3;  // 4 channels do not split in 3 groups
  EXPECT_FALSE(ops::conv2d_grouped(g, t({1, 4, 5, 5}), t({3, 1, 3, 3}), std::nullopt, t({1, 3, 3, 3}), p).is_ok());
  p.groups = 2;  // the output shape is wrong
  EXPECT_FALSE(ops::conv2d_grouped(g, t({1, 4, 5, 5}), t({2, 2, 3, 3}), std::nullopt, t({1, 2, 5, 5}), p).is_ok());
  p.dilation_h = 3;  // a dilated kernel larger than the input
  EXPECT_FALSE(ops::conv2d_grouped(g, t({1, 4, 5, 5}), t({2, 2, 3, 3}), std::nullopt, t({1, 2, 1, 3}), p).is_ok());
}

}  // namespace
}  // namespace recon::gpu
