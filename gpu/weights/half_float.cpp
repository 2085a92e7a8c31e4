// Scalar fp16/bf16/fp32 conversions (see half_float.h). Integer bit manipulation only, so the
// results do not depend on the FPU rounding mode or on compiler flags such as -ffast-math.
#include "gpu/weights/half_float.h"

#include <bit>
#include <cstring>

namespace recon::gpu {

static_assert(std::endian::native == std::endian::little, "weight files are little-endian");

float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  std::uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf or NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);  // rebias 15 → 127
  } else if (mant == 0) {
    bits = sign;  // ±0
  } else {
    // Subnormal: value = mant · 2^-24. Normalise so the leading 1 lands at bit 10.
    std::uint32_t e = 113;  // exponent (biased, fp32) of 2^-14
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mant & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

std::uint16_t f32_to_f16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t exp = (x >> 23) & 0xFFu;
  const std::uint32_t mant = x & 0x7FFFFFu;

  if (exp == 0xFF) {
    if (mant == 0) return sign | 0x7C00u;  // ±inf
    // NaN: keep the top payload bits and force the quiet bit so it never becomes inf.
    return static_cast<std::uint16_t>(sign | 0x7E00u | (mant >> 13));
  }
  // Unbiased exponent e: value = 1.mant · 2^e.
  const int e = static_cast<int>(exp) - 127;
  if (e > 15) return sign | 0x7C00u;  // overflow, whatever the mantissa
  if (e >= -14) {
    // Normal range. Round the 23-bit mantissa to 10 bits, nearest even; a carry may bump the
    // exponent and, at the top, produce inf (e.g. 65520 → inf), which is the correct result.
    std::uint32_t h = (static_cast<std::uint32_t>(e + 15) << 10) | (mant >> 13);
    const std::uint32_t rest = mant & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  if (e < -25) return sign;  // below half the smallest subnormal (2^-25): rounds to ±0
  // Subnormal result: value = m · 2^-24 with m = 1.mant · 2^(e+24), 0 < m < 1024.
  const std::uint32_t full = mant | 0x800000u;            // 24-bit significand, value full · 2^(e-23)
  const auto shift = static_cast<std::uint32_t>(-e - 1);  // 14..24: full >> shift = m·2^0
  std::uint32_t m = full >> shift;
  const std::uint32_t rest = full & ((1u << shift) - 1);
  const std::uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (m & 1u))) ++m;  // may carry into the smallest normal
  return static_cast<std::uint16_t>(sign | m);
}

float bf16_to_f32(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

namespace {
std::uint16_t load_u16(const std::byte* p) {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
}  // namespace

void f16_bytes_to_f32(const std::byte* src, std::size_t count, float* dst) {
  for (std::size_t i = 0; i < count; ++i) dst[i] = f16_to_f32(load_u16(src + 2 * i));
}

void bf16_bytes_to_f32(const std::byte* src, std::size_t count, float* dst) {
  for (std::size_t i = 0; i < count; ++i) dst[i] = bf16_to_f32(load_u16(src + 2 * i));
}

void f32_bytes_to_f16(const std::byte* src, std::size_t count, std::uint16_t* dst) {
  for (std::size_t i = 0; i < count; ++i) {
    float f;
    std::memcpy(&f, src + 4 * i, 4);
    dst[i] = f32_to_f16(f);
  }
}

void bf16_bytes_to_f16(const std::byte* src, std::size_t count, std::uint16_t* dst) {
  // bf16 → f32 is exact, so this is a single rounding.
  for (std::size_t i = 0; i < count; ++i) dst[i] = f32_to_f16(bf16_to_f32(load_u16(src + 2 * i)));
}

}  // namespace recon::gpu
