#include "gpu/models/mast3r/mast3r_batch_plan.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace recon::gpu {

std::vector<ImagePair> consecutive_pairs(size_t image_count) {
  std::vector<ImagePair> pairs;
  for (size_t i = 1; i < image_count; ++i) pairs.push_back({static_cast<int32_t>(i - 1), static_cast<int32_t>(i)});
  return pairs;
}

std::vector<std::vector<int>> encoder_chunks(std::span<const ViewSize> sizes, size_t chunk) {
  std::map<ViewSize, std::vector<int>> by_size;
  for (size_t i = 0; i < sizes.size(); ++i) by_size[sizes[i]].push_back(static_cast<int>(i));
  std::vector<std::vector<int>> chunks;
  for (const auto& [_, list] : by_size) {
    for (size_t i = 0; i < list.size(); i += chunk) {
      chunks.emplace_back(list.begin() + i, list.begin() + std::min(list.size(), i + chunk));
    }
  }
  std::sort(chunks.begin(), chunks.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return chunks;
}

BatchPlan plan_batch(std::span<const ViewSize> sizes, std::span<const int> source_of, std::span<const ImagePair> pairs,
                     size_t chunk) {
  BatchPlan plan;
  std::vector<int> distinct_of(sizes.size(), -1);  // by the index of the source's first view
  auto distinct_index = [&](int i) {
    const int source = source_of[i];
    if (distinct_of[source] < 0) {
      distinct_of[source] = static_cast<int>(plan.images.size());
      plan.images.push_back(source);
      plan.uses.push_back(0);
    }
    ++plan.uses[distinct_of[source]];
    return distinct_of[source];
  };
  for (const ImagePair& p : pairs) plan.pair_images.push_back({distinct_index(p.first), distinct_index(p.second)});

  // Distinct indices are in first-use order, so a chunk's first element says when it is needed.
  std::vector<ViewSize> distinct_sizes;
  for (int i : plan.images) distinct_sizes.push_back(sizes[i]);
  plan.chunks = encoder_chunks(distinct_sizes, chunk);
  plan.row_of.resize(plan.images.size());
  for (size_t s = 0; s < plan.chunks.size(); ++s) {
    for (size_t r = 0; r < plan.chunks[s].size(); ++r) {
      plan.row_of[plan.chunks[s][r]] = {static_cast<int>(s), static_cast<int64_t>(r)};
    }
  }

  for (const auto& [a, b] : plan.pair_images)
    plan.ready_after.push_back(std::max(plan.row_of[a].step, plan.row_of[b].step));
  plan.order.resize(pairs.size());
  std::iota(plan.order.begin(), plan.order.end(), size_t{0});
  std::stable_sort(plan.order.begin(), plan.order.end(),
                   [&](size_t x, size_t y) { return plan.ready_after[x] < plan.ready_after[y]; });
  return plan;
}

}  // namespace recon::gpu
