// Device-to-host copies of many tensors: see tensor_copies.h.
#include "gpu/tensor_copies.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/transfer.h"

namespace recon::gpu {
namespace {

constexpr VkDeviceSize kAlign = 256;  // staging offsets: keeps every copy nicely aligned

VkDeviceSize align_up(VkDeviceSize v) {
  return (v + kAlign - 1) / kAlign * kAlign;
}

// One copy of at most a staging chunk: a whole tensor or a piece of a larger one.
struct Piece {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;  // in `buffer`
  VkDeviceSize bytes = 0;
  uint8_t* destination = nullptr;
};

Status copy_into_import(OneShot& submit, std::span<const TensorCopy> copies, const HostImport& import) {
  const auto* base = static_cast<const uint8_t*>(import.host_data());
  std::vector<std::pair<VkBuffer, VkBufferCopy>> regions;
  for (const TensorCopy& c : copies) {
    const VkDeviceSize bytes = c.tensor->bytes();
    if (c.destination < base || static_cast<VkDeviceSize>(c.destination - base) > import.size() ||
        bytes > import.size() - static_cast<VkDeviceSize>(c.destination - base)) {
      return internal_error("a fetch destination lies outside the imported region");
    }
    regions.push_back(
        {c.tensor->buffer(), VkBufferCopy{c.tensor->offset(), static_cast<VkDeviceSize>(c.destination - base), bytes}});
  }
  return submit.run([&](VkCommandBuffer cmd) {
    full_barrier(cmd);
    for (const auto& [buffer, region] : regions) vkCmdCopyBuffer(cmd, buffer, import.buffer(), 1, &region);
    full_barrier(cmd);  // the writes reach the host (the client) before the fence
  });
}

// One submission copying `group` (at most a chunk in all) into staging, then out to the destinations.
Status copy_group(Runtime& rt, OneShot& submit, std::span<const Piece> group, VkDeviceSize staging_bytes) {
  RECON_ASSIGN_OR_RETURN(PoolBuffer staging, rt.pool(MemoryRole::kStaging).acquire(staging_bytes));
  std::vector<VkDeviceSize> offsets;
  VkDeviceSize cursor = 0;
  for (const Piece& p : group) {
    offsets.push_back(cursor);
    cursor = align_up(cursor + p.bytes);
  }
  RECON_RETURN_IF_ERROR(submit.run([&](VkCommandBuffer cmd) {
    full_barrier(cmd);
    for (size_t i = 0; i < group.size(); ++i) {
      const VkBufferCopy region{group[i].offset, staging.offset() + offsets[i], group[i].bytes};
      vkCmdCopyBuffer(cmd, group[i].buffer, staging.buffer(), 1, &region);
    }
    full_barrier(cmd);
  }));
  const auto* base = static_cast<const uint8_t*>(staging.mapped());
  for (size_t i = 0; i < group.size(); ++i) std::memcpy(group[i].destination, base + offsets[i], group[i].bytes);
  return Status::ok();
}

Status copy_through_staging(Runtime& rt, OneShot& submit, std::span<const TensorCopy> copies) {
  std::vector<Piece> pieces;
  for (const TensorCopy& c : copies) {
    for (VkDeviceSize done = 0; done < c.tensor->bytes(); done += kStagingChunkBytes) {
      const VkDeviceSize bytes = std::min(kStagingChunkBytes, c.tensor->bytes() - done);
      pieces.push_back(Piece{c.tensor->buffer(), c.tensor->offset() + done, bytes, c.destination + done});
    }
  }
  size_t begin = 0;
  while (begin < pieces.size()) {
    size_t end = begin;
    VkDeviceSize bytes = 0;
    while (end < pieces.size() && align_up(bytes) + pieces[end].bytes <= kStagingChunkBytes) {
      bytes = align_up(bytes) + pieces[end].bytes;
      ++end;
    }
    RECON_RETURN_IF_ERROR(copy_group(rt, submit, std::span(pieces).subspan(begin, end - begin), bytes));
    begin = end;
  }
  return Status::ok();
}

}  // namespace

Status copy_tensors_to_host(Runtime& rt, OneShot& submit, std::span<const TensorCopy> copies,
                            const HostImport* import) {
  if (copies.empty()) return Status::ok();
  if (import != nullptr) return copy_into_import(submit, copies, *import);
  return copy_through_staging(rt, submit, copies);
}

}  // namespace recon::gpu
