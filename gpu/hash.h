// FNV-1a 64-bit: a small, stable, non-cryptographic hash for cache keys and file checksums.
#pragma once

#include <cstddef>
#include <cstdint>

namespace recon::gpu {

inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;

inline uint64_t fnv1a(const void* data, size_t size, uint64_t h = kFnvOffset) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace recon::gpu
