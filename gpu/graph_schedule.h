// The order in which a Graph records its dispatches. Models are written as one op after another;
// on a GPU every barrier drains the device, so a dispatch that must wait for its predecessor leaves
// most SMs idle while the predecessor's last workgroups finish. Ordering by dependency level — a
// dispatch's level is one more than the highest level of any earlier dispatch it conflicts with
// (reads what it wrote, writes what it read or wrote) — puts independent work of the same level
// (the two views of a pair, the two heads, the zeroing of split-K counters) between the same pair
// of barriers, so the barrier count becomes the length of the longest dependency chain.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <vector>

namespace recon::gpu {

struct BufferAccess {
  VkBuffer buffer;
  VkDeviceSize begin, end;  // byte range [begin, end)
  bool write;
  // Two accesses conflict — their order matters — when their bytes overlap and either writes.
  bool conflicts(const BufferAccess& o) const {
    return buffer == o.buffer && (write || o.write) && begin < o.end && o.begin < end;
  }
};

// The recording order of dispatches with these accesses (accesses[i] belongs to dispatch i):
// ascending level, program order within a level. Dispatches never move across a fence (an index
// i means dispatches before i stay before it; Graph's timestamp marks are fences). Conflicts are
// judged on all earlier dispatches, so the order keeps every read-after-write, write-after-read
// and write-after-write of the program order.
std::vector<size_t> order_by_dependency_level(const std::vector<std::vector<BufferAccess>>& accesses,
                                              const std::vector<size_t>& fences);

// From RECON_GRAPH_ORDER: "program" records dispatches in the order the model issued them (for
// comparing the two on a device); anything else, or unset, orders by dependency level.
bool graph_reordering_enabled();

}  // namespace recon::gpu
