// Pixel shuffle checked element by element against the PyTorch definition and against MASt3R's
// spec §5.2 formula for the token-major form (channels first and last), including the head's
// r = 16, 25-channel shape; odd sizes; misuse.
#include "gpu/ops/pixel_shuffle.h"

#include <gtest/gtest.h>

#include "gpu/ops/layout.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

class PixelShuffleTest : public GpuTest, public ::testing::WithParamInterface<DType> {
 protected:
  // Values are exact in f16 too (integers up to 2048 and their halves), so comparisons are exact.
  std::vector<float> values(int64_t n, uint32_t seed) {
    auto v = random_floats(n, seed, -1000.0f, 1000.0f);
    for (float& x : v) x = std::round(x * 2.0f) / 2.0f;
    return v;
  }
};

TEST_P(PixelShuffleTest, MatchesThePyTorchDefinition) {
  const DType d = GetParam();
  for (int64_t r : {1, 2, 3}) {
    const int64_t b = 2, c = 3, h = 5, w = 7;
    auto x = values(b * c * r * r * h * w, static_cast<uint32_t>(r));
    Tensor in = upload_f32(rt(), d, {b, c * r * r, h, w}, x);
    Tensor out = poisoned(rt(), d, {b, c, h * r, w * r});
    Graph g(rt());
    Status s = ops::pixel_shuffle(g, in, out, r);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_TRUE(g.run().is_ok());
    auto stored = download_f32(rt(), in), got = download_f32(rt(), out);
    for (int64_t bb = 0; bb < b; ++bb)
      for (int64_t cc = 0; cc < c; ++cc)
        for (int64_t y = 0; y < h; ++y)
          for (int64_t i = 0; i < r; ++i)
            for (int64_t xx = 0; xx < w; ++xx)
              for (int64_t j = 0; j < r; ++j) {
                const float want = stored[((bb * c * r * r + cc * r * r + i * r + j) * h + y) * w + xx];
                const float have = got[((bb * c + cc) * h * r + y * r + i) * w * r + xx * r + j];
                ASSERT_EQ(have, want) << "r=" << r << " at b" << bb << " c" << cc << " y" << y << " x" << xx;
              }
  }
}

// out channel c at pixel (r·ty + dy, r·tx + dx) = MLP output index c·r² + dy·r + dx of token ty·w + tx.
void check_tokens(Runtime& rt, DType d, int64_t b, int64_t h, int64_t w, int64_t c, int64_t r,
                  ops::ShuffleLayout layout, const std::vector<float>& x) {
  const bool last = layout == ops::ShuffleLayout::kChannelsLast;
  const int64_t H = h * r, W = w * r, F = c * r * r;
  Tensor in = upload_f32(rt, d, {b, h * w, F}, x);
  const Shape os = last ? Shape{b, H, W, c} : Shape{b, c, H, W};
  Tensor out = poisoned(rt, d, os);
  Graph g(rt);
  Status s = ops::pixel_shuffle_tokens(g, in, out, r, layout);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_TRUE(g.run().is_ok());
  auto stored = download_f32(rt, in), got = download_f32(rt, out);
  for (int64_t bb = 0; bb < b; ++bb)
    for (int64_t cc = 0; cc < c; ++cc)
      for (int64_t py = 0; py < H; ++py)
        for (int64_t px = 0; px < W; ++px) {
          const int64_t ty = py / r, dy = py % r, tx = px / r, dx = px % r;
          const float want = stored[(bb * h * w + ty * w + tx) * F + cc * r * r + dy * r + dx];
          const float have = last ? got[((bb * H + py) * W + px) * c + cc] : got[((bb * c + cc) * H + py) * W + px];
          ASSERT_EQ(have, want) << (last ? "NHWC" : "NCHW") << " c" << cc << " at (" << py << ", " << px << ")";
        }
}

TEST_P(PixelShuffleTest, TokenMajorInputGoesStraightToAFeatureMap) {
  for (auto layout : {ops::ShuffleLayout::kChannelsFirst, ops::ShuffleLayout::kChannelsLast}) {
    check_tokens(rt(), GetParam(), 2, 3, 5, 3, 4, layout, values(2 * 15 * 48, 10));
    check_tokens(rt(), GetParam(), 1, 1, 1, 2, 3, layout, values(18, 11));
    // MASt3R's local head: 25 channels, r = 16 (here on a 2×3 token grid).
    check_tokens(rt(), GetParam(), 1, 2, 3, 25, 16, layout, values(6 * 6400, 12));
  }
}

TEST_P(PixelShuffleTest, SplitsAlongTheBatchBeyondOneBinding) {
  struct Limit {
    Limit() { ops::set_max_binding_bytes_for_testing(1024); }
    ~Limit() { ops::set_max_binding_bytes_for_testing(0); }
  } limit;
  check_tokens(rt(), GetParam(), 5, 2, 3, 2, 3, ops::ShuffleLayout::kChannelsFirst, values(5 * 6 * 18, 20));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, PixelShuffleTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class PixelShuffleMisuseTest : public GpuTest {};

TEST_F(PixelShuffleMisuseTest, BadShapesAreRefused) {
  auto t = [&](DType d, const Shape& s) { return Tensor::empty(rt(), d, s).value(); };
  const StatusCode bad = StatusCode::kInvalidArgument;
  Graph g(rt());
  EXPECT_EQ(ops::pixel_shuffle(g, t(DType::kF32, {1, 8, 3, 3}), t(DType::kF32, {1, 2, 6, 5}), 2).code(), bad);
  EXPECT_EQ(ops::pixel_shuffle(g, t(DType::kF32, {1, 8, 3, 3}), t(DType::kF32, {1, 8, 3, 3}), 2).code(), bad);
  EXPECT_EQ(ops::pixel_shuffle(g, t(DType::kF32, {1, 7, 3, 3}), t(DType::kF32, {1, 1, 6, 6}), 2).code(), bad);
  EXPECT_EQ(ops::pixel_shuffle(g, t(DType::kF32, {1, 8, 3, 3}), t(DType::kF32, {1, 2, 6, 6}), 0).code(), bad);
  EXPECT_EQ(ops::pixel_shuffle(g, t(DType::kF32, {1, 8, 3, 3}), t(DType::kF16, {1, 2, 6, 6}), 2).code(), bad);
  // N must equal (H/r)·(W/r); features C·r².
  EXPECT_EQ(ops::pixel_shuffle_tokens(g, t(DType::kF32, {1, 6, 8}), t(DType::kF32, {1, 2, 4, 8}), 2).code(), bad);
  EXPECT_EQ(ops::pixel_shuffle_tokens(g, t(DType::kF32, {1, 6, 8}), t(DType::kF32, {1, 2, 5, 6}), 2).code(), bad);
  EXPECT_EQ(ops::pixel_shuffle_tokens(g, t(DType::kF32, {1, 6, 9}), t(DType::kF32, {1, 2, 4, 6}), 2).code(), bad);
  EXPECT_EQ(ops::pixel_shuffle_tokens(g, t(DType::kF32, {1, 6, 8}), t(DType::kF32, {1, 2, 4, 6}), 2,
                                      ops::ShuffleLayout::kChannelsLast)
                .code(),
            bad);
  EXPECT_EQ(g.dispatch_count(), 0u);
  EXPECT_TRUE(ops::pixel_shuffle_tokens(g, t(DType::kF32, {1, 6, 8}), t(DType::kF32, {1, 2, 4, 6}), 2).is_ok());
}

}  // namespace
}  // namespace recon::gpu
