// fp16 / bf16 / fp32 conversions in gpu/weights/half_float.h against exact values.
#include "gpu/weights/half_float.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace recon::gpu {
namespace {

bool f16_is_nan(std::uint16_t h) {
  return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0;
}

TEST(HalfFloat, RoundsFloatsToKnownHalfBitPatterns) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16(0.5f), 0x3800);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);   // largest finite half
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7BFF);  // just below the rounding boundary
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);   // halfway to 65536 rounds (to even) to inf
  EXPECT_EQ(f32_to_f16(-65520.0f), 0xFC00);
  EXPECT_EQ(f32_to_f16(1e10f), 0x7C00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);     // smallest normal
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.0f, -24)), 0x03FF);  // largest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);     // smallest subnormal
  EXPECT_EQ(f32_to_f16(6e-8f), 0x0001);                     // 6e-8 ≈ 1.0066 · 2^-24
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);     // tie between 0 and 2^-24 → even (0)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);     // above the tie
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);     // tie 1.5·2^-24 → even (2)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::denorm_min()), 0x8000);
  EXPECT_EQ(f32_to_f16(std::ldexp(2047.0f, -25)), 0x0400);      // rounds up out of the subnormals
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie → even mantissa
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(3.0f, -11)), 0x3C02);  // tie → even mantissa (up)
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xFC00);
}

TEST(HalfFloat, PreservesNanAndItsSign) {
  EXPECT_TRUE(f16_is_nan(f32_to_f16(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload sits only in the low bits must not turn into infinity.
  const float low_payload = std::bit_cast<float>(0x7F800001u);
  EXPECT_TRUE(f16_is_nan(f32_to_f16(low_payload)));
  const float neg_nan = std::bit_cast<float>(0xFFC00000u);
  EXPECT_TRUE(f16_is_nan(f32_to_f16(neg_nan)));
  EXPECT_EQ(f32_to_f16(neg_nan) & 0x8000, 0x8000);
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7E00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0xFC01)));
}

TEST(HalfFloat, WidensHalfToExactFloats) {
  EXPECT_EQ(f16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(f16_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(f16_to_f32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16_to_f32(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(std::bit_cast<std::uint32_t>(f16_to_f32(0x8000)), 0x80000000u);  // -0 keeps its sign
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
}

TEST(HalfFloat, EveryHalfSurvivesARoundTripThroughFloat) {
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const std::uint16_t back = f32_to_f16(f16_to_f32(bits));
    if (f16_is_nan(bits)) {
      EXPECT_TRUE(f16_is_nan(back)) << std::hex << h;
    } else {
      ASSERT_EQ(back, bits) << std::hex << h;
    }
  }
}

#if defined(__FLT16_MAX__)
// The compiler's _Float16 conversion (IEEE round-to-nearest-even) is an independent reference.
TEST(HalfFloat, MatchesTheCompilersFloat16OnASweepOfFloatBitPatterns) {
  std::uint64_t mismatches = 0;
  for (std::uint64_t x = 0; x <= 0xFFFFFFFFull; x += 4093) {
    const float f = std::bit_cast<float>(static_cast<std::uint32_t>(x));
    const _Float16 ref = static_cast<_Float16>(f);
    std::uint16_t ref_bits;
    std::memcpy(&ref_bits, &ref, 2);
    const std::uint16_t got = f32_to_f16(f);
    if (std::isnan(f)) {
      if (!f16_is_nan(got)) ++mismatches;
    } else if (got != ref_bits) {
      if (++mismatches < 5) ADD_FAILURE() << std::hex << "f32 0x" << x << ": got 0x" << got << " want 0x" << ref_bits;
    }
  }
  EXPECT_EQ(mismatches, 0u);
}
#endif

TEST(HalfFloat, WidensBfloat16Exactly) {
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xC000), -2.0f);
  EXPECT_EQ(bf16_to_f32(0x4049), 3.140625f);
  EXPECT_EQ(bf16_to_f32(0x7F7F), std::bit_cast<float>(0x7F7F0000u));  // largest finite bf16
  EXPECT_EQ(bf16_to_f32(0x0001), std::ldexp(1.0f, -133));             // smallest bf16 subnormal
  EXPECT_EQ(bf16_to_f32(0x7F80), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7FC0)));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(bf16_to_f32(0x8000)), 0x80000000u);
}

TEST(HalfFloat, ArrayFormsReadUnalignedLittleEndianBytes) {
  // Bytes at an odd offset: 1.0h, -2.0h, 65504h.
  const unsigned char raw[] = {0xEE, 0x00, 0x3C, 0x00, 0xC0, 0xFF, 0x7B};
  std::vector<float> out(3);
  f16_bytes_to_f32(reinterpret_cast<const std::byte*>(raw) + 1, 3, out.data());
  EXPECT_EQ(out, (std::vector<float>{1.0f, -2.0f, 65504.0f}));

  const unsigned char bf[] = {0x80, 0x3F, 0x00, 0xC0};
  bf16_bytes_to_f32(reinterpret_cast<const std::byte*>(bf), 2, out.data());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.0f);

  std::uint16_t h[2];
  bf16_bytes_to_f16(reinterpret_cast<const std::byte*>(bf), 2, h);
  EXPECT_EQ(h[0], 0x3C00);
  EXPECT_EQ(h[1], 0xC000);

  const float fs[] = {65520.0f, 6e-8f};
  f32_bytes_to_f16(reinterpret_cast<const std::byte*>(fs), 2, h);
  EXPECT_EQ(h[0], 0x7C00);
  EXPECT_EQ(h[1], 0x0001);
}

}  // namespace
}  // namespace recon::gpu
