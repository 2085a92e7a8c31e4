#include "gpu/ops/wide_access.h"

#include <algorithm>
#include <bit>

namespace recon::gpu::ops {

RowSchedule row_schedule(int64_t cols, DType dtype) {
  constexpr int64_t kMaxWg = 256, kTargetWords = 2;
  const int64_t per_word = elements_per_word(dtype);
  if (cols % per_word == 0) {
    const int64_t nw = cols / per_word;
    // At least 64 invocations for rows of 64 words or more: an NVIDIA SM holds at most 32
    // workgroups, so workgroups of 32 would leave half of its invocation slots empty.
    const int64_t min_wg = nw >= 64 ? 64 : 32;
    const int64_t wg = std::clamp<int64_t>(
        static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>((nw + kTargetWords - 1) / kTargetWords))), min_wg,
        kMaxWg);
    const int64_t words = (nw + wg - 1) / wg;
    if (words <= kMaxRowWords) return {static_cast<uint32_t>(wg), static_cast<uint32_t>(words), 1};
  }
  const int64_t wg = std::clamp<int64_t>(static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(cols))), 32, kMaxWg);
  return {static_cast<uint32_t>(wg), 1, 0};
}

}  // namespace recon::gpu::ops
