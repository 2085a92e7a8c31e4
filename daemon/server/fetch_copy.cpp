// Batched device-to-host copies: see fetch_copy.h.
#include "daemon/server/fetch_copy.h"

#include <cstring>
#include <vector>

#include "gpu/transfer.h"

namespace recon::daemon {
namespace {

constexpr VkDeviceSize kAlign = 256;  // staging offsets: keeps every copy nicely aligned

VkDeviceSize align_up(VkDeviceSize v) {
  return (v + kAlign - 1) / kAlign * kAlign;
}

// One submission copying `group` into one staging buffer, then out to the destinations.
Status copy_group(gpu::Runtime& rt, std::span<const TensorCopy> group, VkDeviceSize staging_bytes) {
  RECON_ASSIGN_OR_RETURN(gpu::PoolBuffer staging, rt.pool(gpu::MemoryRole::kStaging).acquire(staging_bytes));
  std::vector<VkDeviceSize> offsets;
  VkDeviceSize cursor = 0;
  for (const TensorCopy& c : group) {
    offsets.push_back(cursor);
    cursor = align_up(cursor + c.tensor->bytes());
  }
  RECON_RETURN_IF_ERROR(rt.context().run_once([&](VkCommandBuffer cmd) {
    gpu::full_barrier(cmd);
    for (size_t i = 0; i < group.size(); ++i) {
      const VkBufferCopy region{group[i].tensor->offset(), staging.offset() + offsets[i], group[i].tensor->bytes()};
      vkCmdCopyBuffer(cmd, group[i].tensor->buffer(), staging.buffer(), 1, &region);
    }
    gpu::full_barrier(cmd);
  }));
  const auto* base = static_cast<const uint8_t*>(staging.mapped());
  for (size_t i = 0; i < group.size(); ++i)
    std::memcpy(group[i].destination, base + offsets[i], group[i].tensor->bytes());
  return Status::ok();
}

}  // namespace

Status copy_tensors_to_host(gpu::Runtime& rt, std::span<const TensorCopy> copies) {
  size_t begin = 0;
  while (begin < copies.size()) {
    const TensorCopy& first = copies[begin];
    if (first.tensor->bytes() > gpu::kStagingChunkBytes) {
      RECON_RETURN_IF_ERROR(first.tensor->download(rt, first.destination, first.tensor->bytes()));
      ++begin;
      continue;
    }
    size_t end = begin;
    VkDeviceSize bytes = 0;
    while (end < copies.size() && copies[end].tensor->bytes() <= gpu::kStagingChunkBytes &&
           align_up(bytes) + copies[end].tensor->bytes() <= gpu::kStagingChunkBytes) {
      bytes = align_up(bytes) + copies[end].tensor->bytes();
      ++end;
    }
    RECON_RETURN_IF_ERROR(copy_group(rt, copies.subspan(begin, end - begin), std::max<VkDeviceSize>(bytes, 4)));
    begin = end;
  }
  return Status::ok();
}

}  // namespace recon::daemon
