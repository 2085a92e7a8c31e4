// Pad in every mode against a loop transcription of NumPy's np.pad (reflect by repeated mirroring,
// independent of the kernel's modulo form), with negative pads that crop, pads wider than the
// input, f32/f16/i32, and wrap as Tile and Expand.
#include "gpu/ops/pad.h"

#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT
using ops::PadMode;

// The input index NumPy reads along one axis for output coordinate o, or −1 for the constant.
int64_t source(int64_t o, int64_t begin, int64_t n, PadMode mode) {
  int64_t x = o - begin;
  if (x >= 0 && x < n) return x;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return std::clamp<int64_t>(x, 0, n - 1);
    case PadMode::kReflect:
      if (n == 1) return 0;
      while (x < 0 || x >= n) x = x < 0 ? -x : 2 * (n - 1) - x;
      return x;
    case PadMode::kWrap:
      while (x < 0) x += n;
      return x % n;
  }
  return -1;
}

std::vector<double> reference(const std::vector<float>& in, const Shape& s, const Shape& o,
                              const std::vector<int64_t>& begin, PadMode mode, double value) {
  std::vector<double> out(static_cast<size_t>(shape_numel(o)));
  for (int64_t i = 0; i < shape_numel(o); ++i) {
    int64_t rem = i, src = 0, stride = 1;
    bool outside = false;
    for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
      const int64_t c = rem % o[d];
      rem /= o[d];
      const int64_t x = source(c, begin[d], s[d], mode);
      if (x < 0) outside = true;
      src += x * stride;
      stride *= s[d];
    }
    out[static_cast<size_t>(i)] = outside ? value : in[static_cast<size_t>(src)];
  }
  return out;
}

class PadTest : public GpuTest, public ::testing::WithParamInterface<DType> {
 protected:
  void check(const Shape& s, const std::vector<int64_t>& begin, const std::vector<int64_t>& end, PadMode mode,
             uint32_t seed) {
    const DType d = GetParam();
    Shape o = s;
    for (size_t k = 0; k < s.size(); ++k) o[k] += begin[k] + end[k];
    auto x = random_floats(shape_numel(s), seed);
    Tensor in = upload_f32(rt(), d, s, x);
    Tensor out = poisoned(rt(), d, o);
    Graph g(rt());
    Status st = ops::pad(g, in, out, begin, mode, 0.75);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_TRUE(g.run().is_ok());
    const auto want = reference(download_f32(rt(), in), s, o, begin, mode, 0.75);
    const auto got = download_f32(rt(), out);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], static_cast<float>(want[i]))
          << "mode " << static_cast<int>(mode) << " " << shape_string(s) << " -> " << shape_string(o) << " at " << i;
    }
  }
};

TEST_P(PadTest, EveryModeMatchesNumPy) {
  uint32_t seed = 0;
  for (PadMode mode : {PadMode::kConstant, PadMode::kEdge, PadMode::kReflect, PadMode::kWrap}) {
    check({3, 4}, {0, 2}, {0, 1}, mode, ++seed);
    check({2, 3, 5, 6}, {1, 0, 2, 3}, {0, 2, 1, 3}, mode, ++seed);
    check({7},
          {
              9,
          },
          {12}, mode, ++seed);                    // pads wider than the input: reflected and wrapped again
    check({1, 5}, {2, 1}, {1, 1}, mode, ++seed);  // a single row, mirrored onto itself
  }
}

TEST_P(PadTest, NegativePadsCrop) {
  check({4, 6}, {-1, 2}, {-2, -3}, PadMode::kConstant, 40);
  check({4, 6}, {-1, -2}, {1, 0}, PadMode::kReflect, 41);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, PadTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class PadMiscTest : public GpuTest {};

TEST_F(PadMiscTest, IntegersPadWithAnIntegerConstant) {
  std::vector<int32_t> x{1, -2, 3, 2147483647};
  Tensor in = Tensor::from_host(rt(), DType::kI32, {2, 2}, x.data(), x.size() * 4).value();
  Tensor out = Tensor::empty(rt(), DType::kI32, {3, 3}).value();
  Graph g(rt());
  ASSERT_TRUE(ops::pad(g, in, out, {1, 0}, PadMode::kConstant, -5.0).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  std::vector<int32_t> got(9);
  ASSERT_TRUE(out.download(rt(), got.data(), got.size() * 4).is_ok());
  EXPECT_EQ(got, (std::vector<int32_t>{-5, -5, -5, 1, -2, -5, 3, 2147483647, -5}));
}

TEST_F(PadMiscTest, WrapTilesAndBroadcasts) {
  const Shape s{2, 1, 3};
  auto x = random_floats(shape_numel(s), 60);
  Tensor in = upload_f32(rt(), DType::kF32, s, x);
  for (const Shape& o : {Shape{4, 3, 6}, Shape{2, 5, 3}}) {
    Tensor out = poisoned(rt(), DType::kF32, o);
    Graph g(rt());
    ASSERT_TRUE(ops::pad_wrap(g, in, out).is_ok());
    ASSERT_TRUE(g.run().is_ok());
    const auto got = download_f32(rt(), out);
    for (int64_t a = 0; a < o[0]; ++a)
      for (int64_t b = 0; b < o[1]; ++b)
        for (int64_t c = 0; c < o[2]; ++c) {
          ASSERT_EQ(got[static_cast<size_t>((a * o[1] + b) * o[2] + c)], x[static_cast<size_t>((a % 2) * 3 + c % 3)]);
        }
  }
}

TEST_F(PadMiscTest, MisuseIsRefused) {
  Tensor in = Tensor::empty(rt(), DType::kF32, {2, 3}).value();
  Graph g(rt());
  EXPECT_FALSE(ops::pad(g, in, Tensor::empty(rt(), DType::kF32, {2, 3, 1}).value(), {0, 0}, PadMode::kEdge).is_ok());
  EXPECT_FALSE(ops::pad(g, in, Tensor::empty(rt(), DType::kF16, {2, 3}).value(), {0, 0}, PadMode::kEdge).is_ok());
  Tensor empty = Tensor::empty(rt(), DType::kF32, {2, 0}).value();
  EXPECT_FALSE(ops::pad(g, empty, Tensor::empty(rt(), DType::kF32, {2, 2}).value(), {0, 1}, PadMode::kEdge).is_ok());
  EXPECT_TRUE(ops::pad(g, empty, Tensor::empty(rt(), DType::kF32, {2, 2}).value(), {0, 1}, PadMode::kConstant).is_ok());
}

}  // namespace
}  // namespace recon::gpu
