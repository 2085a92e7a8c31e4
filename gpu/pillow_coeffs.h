// Pillow's 8-bit resampling coefficients (libImaging/Resample.c: precompute_coeffs followed by
// normalize_coeffs_8bpc), in one place for the CPU resize (tools/io/official_resize) and the GPU
// one (gpu/ops/resize_official): both must reproduce Pillow bit for bit, so they must agree on
// every weight, down to how the filter argument is rounded in double. Plain C++, no Vulkan.
#pragma once

#include <cstdint>
#include <vector>

namespace recon {

enum class PillowFilter { kBicubic, kLanczos };

// Weights are fixed point with this many fraction bits; a resampled value is
// (2^(bits-1) + Σ pixel·weight) >> bits, clamped to 0..255.
inline constexpr int kPillowPrecisionBits = 32 - 8 - 2;

// One axis resampled from `in_size` to `out_size` positions.
struct PillowCoeffs {
  int ksize = 0;            // weights stored per output position
  std::vector<int> bounds;  // per output position: first input tap, tap count
  std::vector<int32_t> k;   // per output position: ksize weights (the first `count` are used)
};

PillowCoeffs pillow_coeffs(int in_size, int out_size, PillowFilter filter);

}  // namespace recon
