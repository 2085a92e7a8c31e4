// Bit-exact conversions between IEEE fp32, fp16 (binary16) and bfloat16, for weight loading.
// fp16/bf16 → fp32 are exact; fp32 → fp16 rounds to nearest even, overflows to ±inf,
// produces subnormals and keeps NaN a (quiet) NaN with the sign. No dependency on F16C.
#pragma once

#include <cstddef>
#include <cstdint>

namespace recon::gpu {

float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_f16(float f);
float bf16_to_f32(std::uint16_t b);

// Array forms. Sources are little-endian byte streams (safetensors data), so they need no alignment.
void f16_bytes_to_f32(const std::byte* src, std::size_t count, float* dst);
void bf16_bytes_to_f32(const std::byte* src, std::size_t count, float* dst);
void f32_bytes_to_f16(const std::byte* src, std::size_t count, std::uint16_t* dst);
void bf16_bytes_to_f16(const std::byte* src, std::size_t count, std::uint16_t* dst);

}  // namespace recon::gpu
