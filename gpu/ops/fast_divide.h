#pragma once
// Division by a divisor known only at dispatch time, as a multiply and a shift in the shader
// (shaders/fast_divide.glsl): a 32-bit integer division by a run-time value costs an NVIDIA GPU
// about twenty instructions, and an implicit-GEMM convolution's gather divides three times per load
// (pixel → image, row, column; k → tap). The round-up method of Granlund and Montgomery
// ("Division by invariant integers using multiplication", 1994), exact for every dividend below 2^31.
#include <cstdint>

namespace recon::gpu::ops {

struct FastDivisor {
  uint32_t magic = 1;  // the low 32 bits of the 33-bit multiplier 2^32 + magic
  uint32_t shift = 0;  // ceil(log2(d))
};

// d in [1, 2^31].
constexpr FastDivisor fast_divisor(uint32_t d) {
  uint32_t shift = 0;
  while ((uint64_t{1} << shift) < d) ++shift;
  const uint64_t magic = (uint64_t{1} << 32) * ((uint64_t{1} << shift) - d) / d + 1;
  return {static_cast<uint32_t>(magic), shift};
}

// What the shader computes, for tests: n / d for n < 2^31.
constexpr uint32_t fast_divide(uint32_t n, FastDivisor f) {
  const uint64_t hi = (uint64_t{n} * f.magic) >> 32;
  return static_cast<uint32_t>((hi + n) >> f.shift);
}

}  // namespace recon::gpu::ops
