// Max and average pooling against a float64 transcription of PyTorch's rules: odd sizes, padding,
// ceil_mode, count_include_pad both ways, rectangular kernels, dilated max, NaN in max, max of
// integers, ONNX's max indices, splitting, misuse.
#include "gpu/ops/pool2d.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gpu/ops/layout.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

// The first maximum, in row-major order, of the max_pool2d window of plane `pl` starting at (hs, ws),
// its taps p.dilation apart: value, row and column (row −1 where every tap is padding).
struct Tap {
  double v;
  int64_t r, c;
};
template <typename T>
Tap window_max(const std::vector<T>& x, const Shape& s, const ops::Pool2dParams& p, int64_t pl, int64_t hs,
               int64_t ws) {
  Tap best{-INFINITY, -1, -1};
  for (int64_t i = 0; i < p.kernel[0]; ++i)
    for (int64_t j = 0; j < p.kernel[1]; ++j) {
      const int64_t r = hs + i * p.dilation[0], c = ws + j * p.dilation[1];
      if (r < 0 || r >= s[2] || c < 0 || c >= s[3]) continue;
      const double v = x[(pl * s[2] + r) * s[3] + c];
      if (best.r < 0 || v > best.v) best = {v, r, c};
    }
  return best;
}

std::vector<double> reference(bool is_max, const std::vector<float>& x, const Shape& s, const ops::Pool2dParams& p,
                              int64_t oh, int64_t ow) {
  const int64_t sh = p.stride[0] ? p.stride[0] : p.kernel[0], sw = p.stride[1] ? p.stride[1] : p.kernel[1];
  std::vector<double> out(s[0] * s[1] * oh * ow);
  for (int64_t pl = 0; pl < s[0] * s[1]; ++pl)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx) {
        int64_t hs = y * sh - p.pad[0], ws = xx * sw - p.pad[1];
        if (is_max) {
          out[(pl * oh + y) * ow + xx] = window_max(x, s, p, pl, hs, ws).v;
          continue;
        }
        const int64_t pad_end_h = p.pad_end[0] < 0 ? p.pad[0] : p.pad_end[0];
        const int64_t pad_end_w = p.pad_end[1] < 0 ? p.pad[1] : p.pad_end[1];
        int64_t he = std::min(hs + p.kernel[0], s[2] + pad_end_h), we = std::min(ws + p.kernel[1], s[3] + pad_end_w);
        const int64_t pool_size = (he - hs) * (we - ws);
        hs = std::max<int64_t>(hs, 0), ws = std::max<int64_t>(ws, 0);
        he = std::min(he, s[2]), we = std::min(we, s[3]);
        double acc = 0.0;
        for (int64_t r = hs; r < he; ++r)
          for (int64_t c = ws; c < we; ++c) acc += x[(pl * s[2] + r) * s[3] + c];
        out[(pl * oh + y) * ow + xx] = acc / double(p.count_include_pad ? pool_size : (he - hs) * (we - ws));
      }
  return out;
}

// Where each max_pool2d window's maximum lies, flat over the input as ONNX's MaxPool Indices: the
// first maximum in row-major order; plane-major, then row- or column-major within the plane.
template <typename T>
std::vector<int32_t> reference_indices(const std::vector<T>& x, const Shape& s, const ops::Pool2dParams& p, int64_t oh,
                                       int64_t ow, bool column_major) {
  const int64_t sh = p.stride[0] ? p.stride[0] : p.kernel[0], sw = p.stride[1] ? p.stride[1] : p.kernel[1];
  std::vector<int32_t> out;
  for (int64_t pl = 0; pl < s[0] * s[1]; ++pl)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx) {
        const Tap best = window_max(x, s, p, pl, y * sh - p.pad[0], xx * sw - p.pad[1]);
        out.push_back(static_cast<int32_t>(column_major ? (pl * s[3] + best.c) * s[2] + best.r
                                                        : (pl * s[2] + best.r) * s[3] + best.c));
      }
  return out;
}

std::vector<int32_t> download_i32(Runtime& rt, const Tensor& t) {
  std::vector<int32_t> v(t.numel());
  EXPECT_TRUE(t.download(rt, v.data(), v.size() * 4).is_ok());
  return v;
}

class Pool2dTest : public GpuTest, public ::testing::WithParamInterface<DType> {
 protected:
  void check_indices(const Shape& s, const ops::Pool2dParams& p, bool column_major, uint32_t seed) {
    const DType d = GetParam();
    auto size = ops::pool2d_output_size(s[2], s[3], p);
    ASSERT_TRUE(size.is_ok()) << size.status().to_string();
    const Shape os{s[0], s[1], (*size)[0], (*size)[1]};
    Tensor in = upload_f32(rt(), d, s, random_floats(shape_numel(s), seed));
    Tensor out = poisoned(rt(), d, os);
    Tensor indices = poisoned(rt(), DType::kI32, os);
    Graph g(rt());
    Status st = ops::max_pool2d_with_indices(g, in, out, indices, p, column_major);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_TRUE(g.run().is_ok());
    const auto x = download_f32(rt(), in);
    const auto want_max = reference(true, x, s, p, os[2], os[3]);
    const auto got_max = download_f32(rt(), out);
    for (size_t i = 0; i < got_max.size(); ++i) ASSERT_EQ(got_max[i], want_max[i]) << i;
    EXPECT_EQ(download_i32(rt(), indices), reference_indices(x, s, p, os[2], os[3], column_major))
        << shape_string(s) << (column_major ? " column-major" : "");
  }
  void check(bool is_max, const Shape& s, const ops::Pool2dParams& p, uint32_t seed) {
    const DType d = GetParam();
    auto size = ops::pool2d_output_size(s[2], s[3], p);
    ASSERT_TRUE(size.is_ok()) << size.status().to_string();
    const int64_t oh = (*size)[0], ow = (*size)[1];
    auto x = random_floats(shape_numel(s), seed);
    Tensor in = upload_f32(rt(), d, s, x);
    Tensor out = poisoned(rt(), d, {s[0], s[1], oh, ow});
    Graph g(rt());
    Status st = is_max ? ops::max_pool2d(g, in, out, p) : ops::avg_pool2d(g, in, out, p);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_TRUE(g.run().is_ok());
    auto want = reference(is_max, download_f32(rt(), in), s, p, oh, ow);
    auto got = download_f32(rt(), out);
    double worst = 0;  // inputs in [−1, 1]: absolute error = error relative to max|in|
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << "element " << i << " unwritten";
      worst = std::max(worst, std::abs(got[i] - want[i]));
    }
    const double tol = GetParam() == DType::kF16 ? 1e-3 : (is_max ? 0.0 : 1e-6);
    EXPECT_LE(worst, tol) << (is_max ? "max" : "avg") << " over " << shape_string(s) << " k(" << p.kernel[0] << ","
                          << p.kernel[1] << ") s(" << p.stride[0] << "," << p.stride[1] << ") p(" << p.pad[0] << ","
                          << p.pad[1] << ")" << (p.ceil_mode ? " ceil" : "")
                          << (p.count_include_pad ? "" : " exclude-pad");
  }
};

TEST_P(Pool2dTest, MatchesPyTorchOnOddSizes) {
  uint32_t seed = 0;
  for (bool is_max : {true, false}) {
    check(is_max, {2, 3, 7, 9}, {{2, 2}, {0, 0}, {0, 0}}, ++seed);
    check(is_max, {1, 2, 9, 11}, {{3, 3}, {2, 2}, {1, 1}}, ++seed);
    check(is_max, {1, 2, 8, 5}, {{3, 3}, {1, 1}, {1, 1}}, ++seed);
    check(is_max, {2, 1, 10, 7}, {{3, 2}, {2, 1}, {1, 0}}, ++seed);
    check(is_max, {1, 1, 1, 1}, {{1, 1}, {1, 1}, {0, 0}}, ++seed);
  }
}

// Channels-last maps ([B, H, W, C], conv2d_nhwc's layout) against the planar reference of the same
// values: max and average, padding, ceil_mode, one-sided (SAME) padding, dilated max; channel
// counts that fill 16-byte words and counts that do not.
TEST_P(Pool2dTest, ChannelsLastMapsMatchThePlanarReference) {
  const DType d = GetParam();
  struct Run {
    bool is_max;
    Shape nchw;
    ops::Pool2dParams p;
  };
  ops::Pool2dParams same{{3, 3}, {2, 2}, {0, 1}, false, false};
  same.pad_end = {1, 1};
  ops::Pool2dParams dilated{{2, 3}, {1, 2}, {1, 1}};
  dilated.dilation = {2, 1};
  const std::vector<Run> runs = {
      {true, {2, 12, 9, 11}, {{3, 3}, {2, 2}, {1, 1}}},  // ResNet's stem pool at a small, odd size
      {false, {2, 5, 7, 6}, {{2, 2}, {2, 2}, {1, 0}, true, true}},
      {false, {1, 9, 8, 5}, same},
      {true, {1, 3, 10, 7}, dilated},
      // Channels in whole 16-byte words (8 fp16, 4 fp32): a word of channels an invocation.
      {true, {2, 16, 9, 11}, {{3, 3}, {2, 2}, {1, 1}}},
      {false, {2, 24, 7, 6}, {{2, 2}, {2, 2}, {1, 0}, true, true}},
      {false, {1, 8, 8, 5}, same},
      {true, {1, 8, 10, 7}, dilated},
  };
  uint32_t seed = 400;
  for (const Run& r : runs) {
    SCOPED_TRACE(shape_string(r.nchw) + (r.is_max ? " max" : " avg"));
    const Shape& s = r.nchw;
    auto size = ops::pool2d_output_size(s[2], s[3], r.p);
    ASSERT_TRUE(size.is_ok()) << size.status().to_string();
    const int64_t oh = (*size)[0], ow = (*size)[1];
    const std::vector<float> nhwc_values = random_floats(shape_numel(s), ++seed);
    Tensor in = upload_f32(rt(), d, {s[0], s[2], s[3], s[1]}, nhwc_values);
    Tensor out = poisoned(rt(), d, {s[0], oh, ow, s[1]});
    Graph g(rt());
    Status st = r.is_max ? ops::max_pool2d_nhwc(g, in, out, r.p) : ops::avg_pool2d_nhwc(g, in, out, r.p);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_TRUE(g.run().is_ok());
    const std::vector<float> stored = download_f32(rt(), in);  // as rounded to the dtype
    std::vector<float> planar(stored.size());
    for (int64_t b = 0; b < s[0]; ++b)
      for (int64_t y = 0; y < s[2]; ++y)
        for (int64_t x = 0; x < s[3]; ++x)
          for (int64_t c = 0; c < s[1]; ++c) {
            planar[((b * s[1] + c) * s[2] + y) * s[3] + x] = stored[((b * s[2] + y) * s[3] + x) * s[1] + c];
          }
    const auto want = reference(r.is_max, planar, s, r.p, oh, ow);
    const auto got = download_f32(rt(), out);
    double worst = 0;
    for (int64_t b = 0; b < s[0]; ++b)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x)
          for (int64_t c = 0; c < s[1]; ++c) {
            const float v = got[((b * oh + y) * ow + x) * s[1] + c];
            ASSERT_TRUE(std::isfinite(v)) << "unwritten at " << b << "," << y << "," << x << "," << c;
            worst = std::max(worst, std::abs(v - want[((b * s[1] + c) * oh + y) * ow + x]));
          }
    EXPECT_LE(worst, d == DType::kF16 ? 1e-3 : (r.is_max ? 0.0 : 1e-6));
  }
  Graph g(rt());  // no Indices for channels-last maps; [B, H, W, C] output shapes
  Tensor in = Tensor::empty(rt(), d, {1, 4, 4, 3}).value(), wrong = Tensor::empty(rt(), d, {1, 3, 2, 2}).value();
  EXPECT_EQ(ops::max_pool2d_nhwc(g, in, wrong, {{2, 2}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

TEST_P(Pool2dTest, CeilModeAndPaddingCounting) {
  uint32_t seed = 50;
  for (bool ceil_mode : {false, true}) {
    for (bool include : {true, false}) {
      ops::Pool2dParams p{{3, 3}, {2, 2}, {1, 1}, ceil_mode, include};
      check(false, {1, 3, 10, 8}, p, ++seed);
      check(false, {1, 1, 5, 6}, {{2, 2}, {2, 2}, {1, 0}, ceil_mode, include}, ++seed);
      check(true, {1, 3, 10, 8}, p, ++seed);
    }
  }
}

// Padding beyond half the kernel (below the kernel, as ONNX Runtime bounds it): windows that hold
// only their edge's input element, both counting modes, ceil_mode.
TEST_P(Pool2dTest, PaddingBeyondHalfTheKernel) {
  uint32_t seed = 100;
  for (bool is_max : {true, false}) {
    for (bool include : {true, false}) {
      check(is_max, {1, 2, 5, 5}, {{3, 3}, {1, 1}, {2, 2}, false, include}, ++seed);
      check(is_max, {2, 1, 6, 7}, {{4, 3}, {2, 1}, {3, 2}, true, include}, ++seed);
      check(is_max, {1, 1, 4, 5}, {{3, 2}, {2, 2}, {1, 1}, false, include, {2, 1}}, ++seed);
    }
  }
}

// ONNX's SAME_UPPER and SAME_LOWER: one side padded more than the other, both counting modes.
TEST_P(Pool2dTest, AsymmetricPaddingAsOnnxSamePadding) {
  uint32_t seed = 80;
  for (bool is_max : {true, false}) {
    for (bool include : {true, false}) {
      ops::Pool2dParams upper{{3, 3}, {1, 1}, {0, 0}, false, include, {1, 1}};  // 0 before, 1 after
      check(is_max, {1, 2, 5, 6}, upper, ++seed);
      ops::Pool2dParams lower{{2, 3}, {2, 2}, {1, 1}, false, include, {0, 1}};
      check(is_max, {2, 1, 7, 8}, lower, ++seed);
    }
  }
}

// ONNX MaxPool's Indices: several planes (the position counts every plane before), padding, ceil_mode,
// both storage orders; in fp16, rounding makes ties, where the first maximum wins.
TEST_P(Pool2dTest, MaxPoolIndicesAreFlatPositionsOfTheFirstMaximum) {
  uint32_t seed = 120;
  for (bool column_major : {false, true}) {
    check_indices({2, 3, 7, 9}, {{3, 3}, {2, 2}, {1, 1}}, column_major, ++seed);
    check_indices({1, 2, 8, 5}, {{2, 3}, {1, 2}, {1, 1}, true}, column_major, ++seed);
    check_indices({3, 1, 5, 6}, {{3, 3}, {1, 1}, {0, 0}, false, true, {1, 1}}, column_major, ++seed);
  }
}

// ONNX's dilated MaxPool: taps dilation apart, with strides, padding (below the kernel, so windows
// reach further into it than the undilated ones), ceil_mode and uneven ends; and their indices.
TEST_P(Pool2dTest, DilatedMaxPoolAndItsIndices) {
  uint32_t seed = 140;
  check(true, {1, 2, 9, 11}, {{3, 3}, {1, 1}, {0, 0}, false, true, {-1, -1}, {2, 2}}, ++seed);
  check(true, {2, 1, 10, 9}, {{3, 2}, {2, 1}, {2, 1}, true, true, {-1, -1}, {2, 3}}, ++seed);
  check(true, {1, 3, 8, 7}, {{2, 3}, {3, 2}, {1, 0}, false, true, {0, 2}, {3, 2}}, ++seed);
  // One row beyond 65535 elements, as ONNX's MaxPool1d test has (220,000).
  check(true, {1, 1, 1, 70001}, {{1, 4}, {1, 3}, {0, 2}, false, true, {-1, -1}, {1, 3}}, ++seed);
  for (bool column_major : {false, true}) {
    check_indices({2, 3, 7, 9}, {{2, 2}, {1, 2}, {1, 0}, false, true, {-1, -1}, {3, 2}}, column_major, ++seed);
    check_indices({1, 2, 9, 6}, {{3, 2}, {2, 1}, {2, 1}, true, true, {-1, -1}, {2, 4}}, column_major, ++seed);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Pool2dTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class Pool2dMiscTest : public GpuTest {};

TEST_F(Pool2dMiscTest, MaxPoolPropagatesNan) {
  std::vector<float> x(16, 1.0f);
  x[5] = std::nanf("");
  Tensor in = upload_f32(rt(), DType::kF32, {1, 1, 4, 4}, x);
  Tensor out = Tensor::empty(rt(), DType::kF32, {1, 1, 2, 2}).value();
  Graph g(rt());
  ASSERT_TRUE(ops::max_pool2d(g, in, out, {{2, 2}}).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  auto got = download_f32(rt(), out);
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_EQ(got[1], 1.0f);
  EXPECT_EQ(got[3], 1.0f);
}

// i32 max pooling (ONNX MaxPool of int8 and uint8) compares integers: neighbours beyond 2^24, which
// floats would round together, with padding, dilation, ceil_mode and indices.
TEST_F(Pool2dMiscTest, MaxPoolOfI32IsExact) {
  const Shape s{2, 2, 6, 7};
  std::vector<int32_t> x(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<int32_t>((i * 7919) % 101) - 50 + (i % 5 == 0 ? -(1 << 29) : (1 << 28));
  }
  const ops::Pool2dParams p{{3, 2}, {2, 1}, {1, 1}, true, true, {-1, -1}, {2, 2}};
  auto size = ops::pool2d_output_size(s[2], s[3], p);
  ASSERT_TRUE(size.is_ok()) << size.status().to_string();
  const Shape os{s[0], s[1], (*size)[0], (*size)[1]};
  Tensor in = Tensor::from_host(rt(), DType::kI32, s, x.data(), x.size() * 4).value();
  Tensor out = poisoned(rt(), DType::kI32, os), indices = poisoned(rt(), DType::kI32, os);
  Graph g(rt());
  Status st = ops::max_pool2d_with_indices(g, in, out, indices, p);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_TRUE(g.run().is_ok());
  const std::vector<int32_t> want_indices = reference_indices(x, s, p, os[2], os[3], false);
  std::vector<int32_t> want(want_indices.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = x[static_cast<size_t>(want_indices[i])];
  EXPECT_EQ(download_i32(rt(), out), want);
  EXPECT_EQ(download_i32(rt(), indices), want_indices);
}

TEST_F(Pool2dMiscTest, PlanesAreSplitBeyondOneBinding) {
  struct Limit {
    Limit() { ops::set_max_binding_bytes_for_testing(1024); }
    ~Limit() { ops::set_max_binding_bytes_for_testing(0); }
  } limit;
  const Shape s{3, 4, 9, 7};  // 252-byte planes: 3 per dispatch at unaligned offsets
  auto x = random_floats(shape_numel(s), 90);
  Tensor in = upload_f32(rt(), DType::kF32, s, x);
  Tensor out = poisoned(rt(), DType::kF32, {3, 4, 5, 4});
  const ops::Pool2dParams p{{3, 3}, {2, 2}, {1, 1}, false, false};
  Graph g(rt());
  ASSERT_TRUE(ops::avg_pool2d(g, in, out, p).is_ok());
  EXPECT_EQ(g.dispatch_count(), 4u);
  ASSERT_TRUE(g.run().is_ok());
  auto want = reference(false, x, s, p, 5, 4);
  auto got = download_f32(rt(), out);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-6) << i;

  // Max with indices: each dispatch counts the planes before it.
  Tensor indices = poisoned(rt(), DType::kI32, {3, 4, 5, 4});
  Graph gi(rt());
  ASSERT_TRUE(ops::max_pool2d_with_indices(gi, in, out, indices, p).is_ok());
  EXPECT_GT(gi.dispatch_count(), 1u);
  ASSERT_TRUE(gi.run().is_ok());
  EXPECT_EQ(download_i32(rt(), indices), reference_indices(x, s, p, 5, 4, false));
}

TEST_F(Pool2dMiscTest, MisuseIsRefused) {
  auto t = [&](DType d, const Shape& s) { return Tensor::empty(rt(), d, s).value(); };
  const StatusCode bad = StatusCode::kInvalidArgument;
  Graph g(rt());
  const Tensor in = t(DType::kF32, {1, 2, 8, 8});
  EXPECT_EQ(ops::max_pool2d(g, in, t(DType::kF32, {1, 2, 4, 5}), {{2, 2}}).code(), bad);                  // out shape
  EXPECT_EQ(ops::max_pool2d(g, in, t(DType::kF32, {1, 2, 4, 4}), {{0, 2}}).code(), bad);                  // kernel 0
  EXPECT_EQ(ops::max_pool2d(g, in, t(DType::kF32, {1, 2, 5, 5}), {{2, 2}, {2, 2}, {2, 2}}).code(), bad);  // pad ≥ k
  EXPECT_EQ(ops::avg_pool2d(g, in, t(DType::kF32, {1, 2, 1, 1}), {{9, 9}}).code(), bad);                  // too large
  EXPECT_EQ(ops::avg_pool2d(g, in, t(DType::kF16, {1, 2, 4, 4}), {{2, 2}}).code(), bad);                  // dtype
  EXPECT_EQ(ops::avg_pool2d(g, t(DType::kF32, {2, 8, 8}), t(DType::kF32, {2, 4, 4}), {{2, 2}}).code(), bad);
  EXPECT_EQ(ops::avg_pool2d(g, t(DType::kI32, {1, 2, 8, 8}), t(DType::kI32, {1, 2, 4, 4}), {{2, 2}}).code(), bad);
  ops::Pool2dParams dilated{{2, 2}};
  dilated.dilation = {2, 2};
  EXPECT_EQ(ops::avg_pool2d(g, in, t(DType::kF32, {1, 2, 3, 3}), dilated).code(), bad);  // dilated average
  dilated.dilation = {0, 1};
  EXPECT_EQ(ops::max_pool2d(g, in, t(DType::kF32, {1, 2, 4, 4}), dilated).code(), bad);  // dilation 0
  EXPECT_EQ(
      ops::max_pool2d_with_indices(g, in, t(DType::kF32, {1, 2, 4, 4}), t(DType::kF32, {1, 2, 4, 4}), {{2, 2}}).code(),
      bad);  // indices not i32
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
