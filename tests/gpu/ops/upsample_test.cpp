// Bilinear resampling against a float64 transcription of PyTorch's source-coordinate rules:
// ×2 with and without align_corners (MASt3R's DPT shape included), odd sizes, downsampling,
// one-pixel inputs and outputs, the scale-factor form, splitting beyond one binding, misuse.
#include "gpu/ops/upsample.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gpu/ops/layout.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

// PyTorch: area_pixel_compute_scale + area_pixel_compute_source_index, in float64.
// `inv_scale` > 0 replaces in/out (the scale-factor form with align_corners = false).
struct Axis {
  int64_t i0, i1;
  double l1;
};
Axis source(int64_t o, int64_t in, int64_t out, bool align, double inv_scale) {
  double src;
  if (align) {
    src = out > 1 ? double(o) * double(in - 1) / double(out - 1) : 0.0;
  } else {
    const double scale = inv_scale > 0 ? inv_scale : double(in) / double(out);
    src = std::max((double(o) + 0.5) * scale - 0.5, 0.0);
  }
  const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(src), in - 1);
  return {i0, i0 < in - 1 ? i0 + 1 : i0, std::clamp(src - double(i0), 0.0, 1.0)};
}

std::vector<double> reference(const std::vector<float>& x, const Shape& s, int64_t oh, int64_t ow, bool align,
                              double inv_h = 0, double inv_w = 0) {
  std::vector<double> out(s[0] * s[1] * oh * ow);
  for (int64_t p = 0; p < s[0] * s[1]; ++p)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx) {
        const Axis ay = source(y, s[2], oh, align, inv_h), ax = source(xx, s[3], ow, align, inv_w);
        auto at = [&](int64_t r, int64_t c) { return double(x[(p * s[2] + r) * s[3] + c]); };
        const double top = (1 - ax.l1) * at(ay.i0, ax.i0) + ax.l1 * at(ay.i0, ax.i1);
        const double bottom = (1 - ax.l1) * at(ay.i1, ax.i0) + ax.l1 * at(ay.i1, ax.i1);
        out[(p * oh + y) * ow + xx] = (1 - ay.l1) * top + ay.l1 * bottom;
      }
  return out;
}

double max_abs_error(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    worst = std::max(worst, std::abs(got[i] - want[i]));
  }
  return worst;
}

class UpsampleTest : public GpuTest, public ::testing::WithParamInterface<DType> {
 protected:
  // Inputs in [−1, 1], so the absolute error is the error relative to max|in|.
  double size_form(const Shape& s, int64_t oh, int64_t ow, bool align, uint32_t seed) {
    const DType d = GetParam();
    auto x = random_floats(shape_numel(s), seed);
    Tensor in = upload_f32(rt(), d, s, x);
    Tensor out = poisoned(rt(), d, {s[0], s[1], oh, ow});
    Graph g(rt());
    Status st = ops::upsample_bilinear(g, in, out, align);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_TRUE(g.run().is_ok());
    return max_abs_error(download_f32(rt(), out), reference(download_f32(rt(), in), s, oh, ow, align));
  }
  double tol() const { return GetParam() == DType::kF32 ? 1e-6 : 1e-3; }
};

TEST_P(UpsampleTest, TimesTwoWithAndWithoutAlignCorners) {
  for (bool align : {true, false}) {
    EXPECT_LE(size_form({2, 3, 5, 7}, 10, 14, align, 1), tol()) << align;
    EXPECT_LE(size_form({1, 4, 12, 16}, 24, 32, align, 2), tol()) << align;  // DPT refinenet4 at 384×512
  }
}

// Output rows of whole 16-byte words take the word path; the DPT's last upsample at 24 planes
// (4.7 M outputs) has more words than the looping grid has invocations.
TEST_P(UpsampleTest, WholeWordRowsLoopOverTheGrid) {
  EXPECT_LE(size_form({1, 24, 192, 256}, 384, 512, true, 8), tol());
  EXPECT_LE(size_form({2, 3, 9, 20}, 17, 40, false, 9), tol());
}

// The word path steps each word's x sources from its first (shaders/upsample.comp, word_sources):
// downsampling (steps of two and more input columns), identity, and align_corners = false words at
// the left edge whose outputs clamp to column 0 (taken per output), next to words that step.
TEST_P(UpsampleTest, WordRowsStepTheirSourcesFromTheFirst) {
  for (bool align : {true, false}) {
    EXPECT_LE(size_form({1, 2, 6, 37}, 5, 16, align, 10), tol()) << align;   // 37 → 16 columns
    EXPECT_LE(size_form({1, 2, 4, 200}, 3, 24, align, 11), tol()) << align;  // 200 → 24
    EXPECT_LE(size_form({1, 1, 3, 16}, 3, 16, align, 12), tol()) << align;   // identity
    EXPECT_LE(size_form({1, 2, 2, 3}, 5, 48, align, 13), tol()) << align;    // 3 → 48
    EXPECT_LE(size_form({1, 2, 2, 2}, 4, 64, align, 14), tol()) << align;    // 2 → 64
  }
}

TEST_P(UpsampleTest, OddSizesDownsamplingAndSinglePixels) {
  for (bool align : {true, false}) {
    EXPECT_LE(size_form({1, 2, 7, 5}, 13, 11, align, 3), tol()) << align;
    EXPECT_LE(size_form({1, 1, 9, 8}, 4, 3, align, 4), tol()) << align;  // downsampling
    EXPECT_LE(size_form({1, 1, 5, 5}, 1, 1, align, 5), tol()) << align;  // one output pixel
    EXPECT_LE(size_form({1, 2, 1, 3}, 4, 5, align, 6), tol()) << align;  // one input row
    EXPECT_LE(size_form({3, 1, 6, 6}, 6, 6, align, 7), tol()) << align;  // identity size
  }
}

TEST_P(UpsampleTest, ScaleFactorFormUsesTheReciprocalScale) {
  const DType d = GetParam();
  struct Case {
    Shape s;
    double sh, sw;
    bool align;
  };
  for (const Case& c :
       {Case{{1, 2, 5, 7}, 1.5, 2.5, false}, Case{{2, 1, 6, 4}, 2.0, 2.0, true}, Case{{1, 1, 7, 9}, 0.6, 1.7, false}}) {
    const int64_t oh = static_cast<int64_t>(std::floor(c.s[2] * c.sh)),
                  ow = static_cast<int64_t>(std::floor(c.s[3] * c.sw));
    auto x = random_floats(shape_numel(c.s), 30);
    Tensor in = upload_f32(rt(), d, c.s, x);
    Tensor out = poisoned(rt(), d, {c.s[0], c.s[1], oh, ow});
    Graph g(rt());
    Status st = ops::upsample_bilinear_scale(g, in, out, c.sh, c.sw, c.align);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_TRUE(g.run().is_ok());
    auto want =
        reference(download_f32(rt(), in), c.s, oh, ow, c.align, c.align ? 0 : 1.0 / c.sh, c.align ? 0 : 1.0 / c.sw);
    EXPECT_LE(max_abs_error(download_f32(rt(), out), want), GetParam() == DType::kF32 ? 2e-6 : 1e-3)
        << shape_string(c.s) << " x (" << c.sh << ", " << c.sw << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, UpsampleTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class UpsampleMiscTest : public GpuTest {};

TEST_F(UpsampleMiscTest, PlanesAreSplitBeyondOneBinding) {
  struct Limit {
    Limit() { ops::set_max_binding_bytes_for_testing(2048); }
    ~Limit() { ops::set_max_binding_bytes_for_testing(0); }
  } limit;
  const Shape s{3, 5, 7, 9};  // output planes of 14×18×4 = 1008 bytes: one per dispatch
  auto x = random_floats(shape_numel(s), 40);
  Tensor in = upload_f32(rt(), DType::kF32, s, x);
  Tensor out = poisoned(rt(), DType::kF32, {3, 5, 14, 18});
  Graph g(rt());
  ASSERT_TRUE(ops::upsample_bilinear(g, in, out, true).is_ok());
  EXPECT_EQ(g.dispatch_count(), 15u);
  ASSERT_TRUE(g.run().is_ok());
  EXPECT_LE(max_abs_error(download_f32(rt(), out), reference(x, s, 14, 18, true)), 1e-6);
}

TEST_F(UpsampleMiscTest, MisuseIsRefused) {
  auto t = [&](DType d, const Shape& s) { return Tensor::empty(rt(), d, s).value(); };
  const StatusCode bad = StatusCode::kInvalidArgument;
  Graph g(rt());
  const Tensor in = t(DType::kF32, {1, 2, 4, 4});
  EXPECT_EQ(ops::upsample_bilinear(g, in, t(DType::kF32, {1, 3, 8, 8}), true).code(), bad);  // channels
  EXPECT_EQ(ops::upsample_bilinear(g, in, t(DType::kF32, {2, 8, 8}), true).code(), bad);     // rank
  EXPECT_EQ(ops::upsample_bilinear(g, in, t(DType::kF16, {1, 2, 8, 8}), true).code(), bad);  // dtype
  EXPECT_EQ(ops::upsample_bilinear(g, t(DType::kI32, {1, 2, 4, 4}), t(DType::kI32, {1, 2, 8, 8}), true).code(), bad);
  EXPECT_EQ(ops::upsample_bilinear(g, t(DType::kF32, {1, 2, 0, 4}), t(DType::kF32, {1, 2, 3, 8}), true).code(), bad);
  EXPECT_EQ(ops::upsample_bilinear_scale(g, in, t(DType::kF32, {1, 2, 8, 9}), 2.0, 2.0, false).code(), bad);
  EXPECT_EQ(ops::upsample_bilinear_scale(g, in, t(DType::kF32, {1, 2, 0, 0}), 0.0, 0.0, false).code(), bad);
  EXPECT_EQ(ops::upsample_bilinear_scale(g, in, t(DType::kF32, {1, 2, 8, 8}), NAN, 2.0, false).code(), bad);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
