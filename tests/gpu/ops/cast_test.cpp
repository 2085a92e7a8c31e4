// ops::cast (f32 ↔ f16) bit for bit against the CPU conversion (round to nearest even), whole and
// split into chunks beyond one binding (with a lowered limit), and misuse.
#include "gpu/ops/cast.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
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

TEST_F(CastTest, BadArgumentsAreRefused) {
  Graph g(rt());
  auto t = [&](DType d, const Shape& s) { return Tensor::empty(rt(), d, s).value(); };
  EXPECT_EQ(ops::cast(g, t(DType::kF32, {4, 4}), t(DType::kF16, {16})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::cast(g, t(DType::kF32, {4}), t(DType::kI32, {4})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
