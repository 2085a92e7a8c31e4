// ops::cast (f32, f16 and i32 each way) and ops::cast_to_bool bit for bit against the CPU's
// conversions (round to nearest even, truncation toward zero, NumPy's bool()), whole and split into
// chunks beyond one binding (with a lowered limit), and misuse; is_nan and is_inf (each choice of
// signs) exactly against std::isnan and std::isinf; wrap_int against C++'s narrowing.
#include "gpu/ops/cast.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <vector>

#include "gpu/ops/layout.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

class CastTest : public GpuTest {
 protected:
  // Random values over most of the f16 range, ties of round-to-nearest-even, zeros and the largest
  // f16. Nothing that overflows or lands on an f16 subnormal: Vulkan lets a device flush those.
  static std::vector<float> inputs(size_t n) {
    std::vector<float> v = random_floats(n, 7, -60000.0f, 60000.0f);
    const std::vector<float> small = random_floats(n, 8, -1.0f, 1.0f);
    for (size_t i = 1; i < n; i += 2) v[i] = std::abs(small[i]) < 1e-4f ? 0.5f : small[i];
    const float specials[] = {0.0f, -0.0f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 2049.0f, -2051.0f, 65504.0f};
    for (size_t i = 0; i < std::size(specials) && i * 3 < n; ++i) v[i * 3] = specials[i];
    return v;
  }

  void expect_round_trip(const Shape& shape) {
    const std::vector<float> x = inputs(static_cast<size_t>(shape_numel(shape)));
    Tensor in = upload_f32(rt(), DType::kF32, shape, x);
    Tensor half = poisoned(rt(), DType::kF16, shape);
    Tensor back = poisoned(rt(), DType::kF32, shape);
    Graph g(rt());
    ASSERT_TRUE(ops::cast(g, in, half).is_ok());
    ASSERT_TRUE(ops::cast(g, half, back).is_ok());
    dispatches_ = g.dispatch_count();
    ASSERT_TRUE(g.run().is_ok());

    std::vector<uint16_t> got(x.size());
    ASSERT_TRUE(half.download(rt(), got.data(), got.size() * 2).is_ok());
    const std::vector<float> got_back = download_f32(rt(), back);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(got[i], f32_to_f16(x[i])) << "f32 -> f16 of " << x[i] << " at " << i;
      const float want = f16_to_f32(got[i]);  // f16 -> f32 is exact
      ASSERT_EQ(std::memcmp(&got_back[i], &want, 4), 0) << "f16 -> f32 at " << i;
    }
  }
  size_t dispatches_ = 0;
};

TEST_F(CastTest, ConvertsBothWaysLikeTheCpu) {
  expect_round_trip({3, 5, 67});  // 1005 elements: one element per invocation
  EXPECT_EQ(dispatches_, 2u);
  expect_round_trip({4, 5, 64});  // whole groups of four: the grid-stride kernel
  EXPECT_EQ(dispatches_, 2u);
  expect_round_trip({(int64_t{1} << 21) + 4});  // more groups of four than the grid has invocations
  EXPECT_EQ(dispatches_, 2u);
}

TEST_F(CastTest, SplitsOperandsBeyondOneBinding) {
  struct Limit {
    Limit() { ops::set_max_binding_bytes_for_testing(4096); }  // 1024 f32: chunks of 1024 elements
    ~Limit() { ops::set_max_binding_bytes_for_testing(0); }
  } limit;
  expect_round_trip({7, 1001});  // 7007 elements: 6 full chunks and a ragged one, each way
  EXPECT_EQ(dispatches_, 14u);
}

// Where the device binds more than Vulkan's guaranteed 128 MiB (2 GiB on NVIDIA), a 192 MiB f32
// operand goes in one dispatch at the device's limit. Skipped on lavapipe (128 MiB).
TEST_F(CastTest, OperandBeyond128MiBIsOneDispatchWhereTheDeviceAllows) {
  const int64_t n = int64_t{48} << 20;  // 192 MiB of f32
  if (ops::max_binding_bytes() < static_cast<uint64_t>(n) * 4) {
    GTEST_SKIP() << "the device binds " << ops::max_binding_bytes() << " bytes";
  }
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 65519 - 32759) * 0.75f;  // exact in f32
  Tensor in = upload_f32(rt(), DType::kF32, {n}, x);
  Tensor half = poisoned(rt(), DType::kF16, {n});
  Graph g(rt());
  ASSERT_TRUE(ops::cast(g, in, half).is_ok());
  EXPECT_EQ(g.dispatch_count(), 1u);
  ASSERT_TRUE(g.run().is_ok());
  std::vector<uint16_t> got(static_cast<size_t>(n));
  ASSERT_TRUE(half.download(rt(), got.data(), got.size() * 2).is_ok());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], f32_to_f16(x[i])) << "at " << i;
}

// i32 to f32 and f16 round to nearest even as the CPU does (integers beyond 2^24 in f32, beyond
// 2048 in f16), and f32 and f16 to i32 truncate toward zero; f16 values stay within its range.
TEST_F(CastTest, IntegersAndFloatsConvertLikeTheCpu) {
  for (const DType f : {DType::kF32, DType::kF16}) {
    const bool half = f == DType::kF16;
    std::vector<int32_t> ints{0, 1, -1, 7, 2047, 2049, -2051, 4097, 65504, -65504, 12345, -777};
    if (!half) ints.insert(ints.end(), {16777217, -16777219, 123456789, INT32_MIN, INT32_MAX});
    for (const float r : random_floats(301, 9, -60000.0f, 60000.0f)) ints.push_back(static_cast<int32_t>(r));
    const Shape shape{static_cast<int64_t>(ints.size())};
    Tensor in = Tensor::from_host(rt(), DType::kI32, shape, ints.data(), ints.size() * 4).value();
    Tensor as_float = poisoned(rt(), f, shape);
    Tensor back = poisoned(rt(), DType::kI32, shape);
    std::vector<float> x = random_floats(ints.size(), 10, -60000.0f, 60000.0f);
    const float specials[] = {2.5f, -2.5f, -0.75f, 0.75f, -0.0f, 65504.0f, -65504.0f, 1e-3f};
    for (size_t i = 0; i < std::size(specials); ++i) x[i] = specials[i];
    if (!half) x[std::size(specials)] = 1e9f;
    Tensor floats = upload_f32(rt(), f, shape, x);
    Tensor truncated = poisoned(rt(), DType::kI32, shape);
    Graph g(rt());
    ASSERT_TRUE(ops::cast(g, in, as_float).is_ok());
    ASSERT_TRUE(ops::cast(g, floats, truncated).is_ok());
    ASSERT_TRUE(g.run().is_ok());
    const std::vector<float> got = download_f32(rt(), as_float), stored = download_f32(rt(), floats);
    std::vector<int32_t> got_ints(ints.size());
    ASSERT_TRUE(truncated.download(rt(), got_ints.data(), got_ints.size() * 4).is_ok());
    for (size_t i = 0; i < ints.size(); ++i) {
      const float want = half ? f16_to_f32(f32_to_f16(static_cast<float>(ints[i]))) : static_cast<float>(ints[i]);
      ASSERT_EQ(got[i], want) << dtype_name(f) << " of " << ints[i];
      ASSERT_EQ(got_ints[i], static_cast<int32_t>(std::trunc(stored[i]))) << "i32 of " << stored[i];
    }
  }
}

// wrap_int: i32 words (and f32 truncated) narrowed into int8, uint8, int16 and uint16 exactly as
// C++ narrows, into a new tensor and in place.
TEST_F(CastTest, WrapIntNarrowsLikeTheCpu) {
  std::vector<int32_t> ints{0,     1,     -1,     127,    128,   -128,  -129,      255,      256,
                            32767, 32768, -32768, -32769, 65535, 65536, INT32_MIN, INT32_MAX};
  for (const float r : random_floats(200, 11, -1e6f, 1e6f)) ints.push_back(static_cast<int32_t>(r));
  const Shape shape{static_cast<int64_t>(ints.size())};
  std::vector<float> floats;
  for (int32_t v : ints) floats.push_back(static_cast<float>(v % 100000) + (v < 0 ? -0.75f : 0.75f));
  for (const int bits : {8, 16}) {
    for (const bool is_signed : {false, true}) {
      const auto narrow = [&](int64_t v) -> int32_t {
        if (bits == 8) return is_signed ? static_cast<int8_t>(v) : static_cast<uint8_t>(v);
        return is_signed ? static_cast<int16_t>(v) : static_cast<uint16_t>(v);
      };
      Tensor in = Tensor::from_host(rt(), DType::kI32, shape, ints.data(), ints.size() * 4).value();
      Tensor out = poisoned(rt(), DType::kI32, shape);
      Tensor in_place = Tensor::from_host(rt(), DType::kI32, shape, ints.data(), ints.size() * 4).value();
      Tensor from_float = upload_f32(rt(), DType::kF32, shape, floats);
      Tensor float_out = poisoned(rt(), DType::kI32, shape);
      Graph g(rt());
      ASSERT_TRUE(ops::wrap_int(g, in, out, bits, is_signed).is_ok());
      ASSERT_TRUE(ops::wrap_int(g, in_place, in_place, bits, is_signed).is_ok());
      ASSERT_TRUE(ops::wrap_int(g, from_float, float_out, bits, is_signed).is_ok());
      ASSERT_TRUE(g.run().is_ok());
      std::vector<int32_t> got(ints.size()), got_in_place(ints.size()), got_float(ints.size());
      ASSERT_TRUE(out.download(rt(), got.data(), got.size() * 4).is_ok());
      ASSERT_TRUE(in_place.download(rt(), got_in_place.data(), got_in_place.size() * 4).is_ok());
      ASSERT_TRUE(float_out.download(rt(), got_float.data(), got_float.size() * 4).is_ok());
      for (size_t i = 0; i < ints.size(); ++i) {
        ASSERT_EQ(got[i], narrow(ints[i])) << bits << (is_signed ? " signed" : " unsigned") << " of " << ints[i];
        ASSERT_EQ(got_in_place[i], narrow(ints[i])) << "in place, " << bits << " of " << ints[i];
        ASSERT_EQ(got_float[i], narrow(static_cast<int64_t>(std::trunc(floats[i])))) << bits << " of " << floats[i];
      }
    }
  }
}

// cast_to_bool: non-zero is 1, ±0 is 0, NaN and infinities are 1 (NumPy's bool()); inverted, the
// opposite. Subnormal floats are left out: Vulkan lets a device flush them.
TEST_F(CastTest, ToBoolTellsZeroFromEverythingElse) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x{0.0f, -0.0f, 1.0f, -2.5f, inf, -inf, nan, 1e-4f, -65504.0f};
  const std::vector<int32_t> ints{0, 1, -1, 2, INT32_MIN, INT32_MAX, 0};
  for (const bool invert : {false, true}) {
    for (const DType d : {DType::kF32, DType::kF16, DType::kI32}) {
      const size_t n = d == DType::kI32 ? ints.size() : x.size();
      Tensor in = d == DType::kI32 ? Tensor::from_host(rt(), d, {static_cast<int64_t>(n)}, ints.data(), n * 4).value()
                                   : upload_f32(rt(), d, {static_cast<int64_t>(n)}, x);
      Tensor out = poisoned(rt(), DType::kI32, {static_cast<int64_t>(n)});
      Graph g(rt());
      ASSERT_TRUE(ops::cast_to_bool(g, in, out, invert).is_ok());
      ASSERT_TRUE(g.run().is_ok());
      std::vector<int32_t> got(n);
      ASSERT_TRUE(out.download(rt(), got.data(), n * 4).is_ok());
      for (size_t i = 0; i < n; ++i) {
        const bool nonzero = d == DType::kI32 ? ints[i] != 0 : !(x[i] == 0.0f);
        ASSERT_EQ(got[i], nonzero != invert ? 1 : 0) << dtype_name(d) << " at " << i << (invert ? ", inverted" : "");
      }
    }
  }
}

// NaN (quiet, signalling, negative, f16's) and ±inf against the CPU's tests, among finite values
// (±0, the largest f16 and f32, subnormals of f32), in f32 and f16 (f32 beyond f16's range is inf
// there).
TEST_F(CastTest, IsNaNAndIsInfTestTheBits) {
  const float inf = std::numeric_limits<float>::infinity();
  uint32_t negative_nan_bits = 0xffc00001u, signalling_bits = 0x7f800001u;
  float negative_nan = 0, signalling = 0;
  std::memcpy(&negative_nan, &negative_nan_bits, 4);
  std::memcpy(&signalling, &signalling_bits, 4);
  const std::vector<float> x{
      0.0f,     -0.0f,        1.5f,       inf,      -inf,      std::numeric_limits<float>::quiet_NaN(),
      -3.0f,    negative_nan, signalling, 65504.0f, -65504.0f, 3.0e38f,
      -3.0e38f, 1e-40f,       7.0f};
  for (const DType d : {DType::kF32, DType::kF16}) {
    const auto n = static_cast<int64_t>(x.size());
    Tensor in = upload_f32(rt(), d, {n}, x);
    const std::vector<float> stored = download_f32(rt(), in);
    for (const int kind : {0, 1, 2, 3, 4}) {  // 0: is_nan; is_inf of +inf, −inf, both, neither
      Tensor out = poisoned(rt(), DType::kI32, {n});
      Graph g(rt());
      const Status s =
          kind == 0 ? ops::is_nan(g, in, out) : ops::is_inf(g, in, out, kind == 1 || kind == 3, kind == 2 || kind == 3);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      ASSERT_TRUE(g.run().is_ok());
      std::vector<int32_t> got(x.size());
      ASSERT_TRUE(out.download(rt(), got.data(), got.size() * 4).is_ok());
      for (size_t i = 0; i < x.size(); ++i) {
        const float v = stored[i];
        const bool want = kind == 0   ? std::isnan(v)
                          : kind == 1 ? v == inf
                          : kind == 2 ? v == -inf
                          : kind == 3 ? std::isinf(v)
                                      : false;
        ASSERT_EQ(got[i], want ? 1 : 0) << dtype_name(d) << " check " << kind << " of " << x[i] << " at " << i;
      }
    }
  }
}

// An f16 source and an i32 destination split at a lowered limit: chunks stay aligned in both.
TEST_F(CastTest, ToBoolSplitsOperandsBeyondOneBinding) {
  struct Limit {
    Limit() { ops::set_max_binding_bytes_for_testing(4096); }
    ~Limit() { ops::set_max_binding_bytes_for_testing(0); }
  } limit;
  const int64_t n = 7001;
  std::vector<float> x = random_floats(static_cast<size_t>(n), 11, -1.0f, 1.0f);
  for (size_t i = 0; i < x.size(); i += 3) x[i] = 0.0f;
  Tensor in = upload_f32(rt(), DType::kF16, {n}, x);
  Tensor out = poisoned(rt(), DType::kI32, {n});
  Graph g(rt());
  ASSERT_TRUE(ops::cast_to_bool(g, in, out).is_ok());
  EXPECT_GT(g.dispatch_count(), 6u);
  ASSERT_TRUE(g.run().is_ok());
  const std::vector<float> stored = download_f32(rt(), in);
  std::vector<int32_t> got(static_cast<size_t>(n));
  ASSERT_TRUE(out.download(rt(), got.data(), got.size() * 4).is_ok());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], stored[i] != 0.0f ? 1 : 0) << "at " << i;
}

TEST_F(CastTest, BadArgumentsAreRefused) {
  Graph g(rt());
  auto t = [&](DType d, const Shape& s) { return Tensor::empty(rt(), d, s).value(); };
  EXPECT_EQ(ops::cast(g, t(DType::kF32, {4, 4}), t(DType::kF16, {16})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::cast(g, t(DType::kF32, {4}), t(DType::kU8, {4})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::cast_to_bool(g, t(DType::kF32, {4}), t(DType::kF32, {4})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::cast_to_bool(g, t(DType::kU8, {4}), t(DType::kI32, {4})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::is_nan(g, t(DType::kI32, {4}), t(DType::kI32, {4})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::is_inf(g, t(DType::kF32, {4}), t(DType::kF16, {4})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::wrap_int(g, t(DType::kI32, {4}), t(DType::kI32, {4}), 12, true).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::wrap_int(g, t(DType::kI32, {4}), t(DType::kF32, {4}), 8, true).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
