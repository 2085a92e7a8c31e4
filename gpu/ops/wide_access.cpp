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

uint32_t layer_norm_loop_groups(const Capabilities& caps, const RowSchedule& schedule, int64_t rows) {
  constexpr int64_t kMinRowsPerGroup = 12;
  if (schedule.wide != 1 || caps.shader_core_count == 0) return 0;
  const int64_t groups = int64_t{kLayerNormLoopGroupsPerSm} * caps.shader_core_count;
  return rows >= kMinRowsPerGroup * groups ? static_cast<uint32_t>(groups) : 0;
}

uint32_t fixed_subgroup_size(const Capabilities& caps) {
  const bool fixed = caps.subgroup_size > 0 && caps.min_subgroup_size == caps.subgroup_size &&
                     caps.max_subgroup_size == caps.subgroup_size;
  return fixed ? caps.subgroup_size : 0;
}

RowSchedule softmax_schedule(int64_t cols, DType dtype, uint32_t fixed_subgroup) {
  constexpr uint32_t kWg = 128, kMaxLaneWords = 4;
  const int64_t nw = cols / elements_per_word(dtype);
  if (dtype != DType::kF16 || fixed_subgroup == 0 || fixed_subgroup > kWg || cols % elements_per_word(dtype) != 0 ||
      nw <= 2 * int64_t{fixed_subgroup} || nw > kMaxLaneWords * int64_t{fixed_subgroup}) {
    return row_schedule(cols, dtype);
  }
  const auto words = static_cast<uint32_t>((nw + fixed_subgroup - 1) / fixed_subgroup);
  return {kWg, words, 2, kWg / fixed_subgroup};
}

}  // namespace recon::gpu::ops
