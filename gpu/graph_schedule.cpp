#include "gpu/graph_schedule.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <unordered_map>

namespace recon::gpu {
namespace {
struct LevelledAccess {
  BufferAccess access;
  size_t level;
};
}  // namespace

std::vector<size_t> order_by_dependency_level(const std::vector<std::vector<BufferAccess>>& accesses,
                                              const std::vector<size_t>& fences) {
  const size_t n = accesses.size();
  std::vector<size_t> level(n);
  // Every earlier access, per buffer (pooled tensors share a few large buffers).
  std::unordered_map<VkBuffer, std::vector<LevelledAccess>> history;
  std::vector<size_t> sorted_fences = fences;
  std::sort(sorted_fences.begin(), sorted_fences.end());
  // A fence starts its segment one level above everything before it.
  size_t next_fence = 0, segment_base = 0, max_level = 0;
  for (size_t i = 0; i < n; ++i) {
    while (next_fence < sorted_fences.size() && sorted_fences[next_fence] <= i) {
      if (i > 0) segment_base = max_level + 1;
      ++next_fence;
    }
    size_t l = segment_base;
    for (const BufferAccess& a : accesses[i]) {
      auto it = history.find(a.buffer);
      if (it == history.end()) continue;
      for (const LevelledAccess& p : it->second) {
        if (p.access.conflicts(a)) l = std::max(l, p.level + 1);
      }
    }
    level[i] = l;
    max_level = std::max(max_level, l);
    for (const BufferAccess& a : accesses[i]) history[a.buffer].push_back({a, l});
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return level[a] < level[b]; });
  return order;
}

bool graph_reordering_enabled() {
  const char* v = std::getenv("RECON_GRAPH_ORDER");
  return v == nullptr || std::strcmp(v, "program") != 0;
}

}  // namespace recon::gpu
