#include "gpu/transfer.h"

#include <algorithm>
#include <cstring>

#include "gpu/runtime.h"

namespace recon::gpu {

void memory_barrier(VkCommandBuffer cmd, VkPipelineStageFlags2 src_stage, VkAccessFlags2 src_access,
                    VkPipelineStageFlags2 dst_stage, VkAccessFlags2 dst_access) {
  VkMemoryBarrier2 barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER_2};
  barrier.srcStageMask = src_stage;
  barrier.srcAccessMask = src_access;
  barrier.dstStageMask = dst_stage;
  barrier.dstAccessMask = dst_access;
  VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
  dep.memoryBarrierCount = 1;
  dep.pMemoryBarriers = &barrier;
  vkCmdPipelineBarrier2(cmd, &dep);
}

void full_barrier(VkCommandBuffer cmd) {
  memory_barrier(cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_2_HOST_BIT,
                 VK_ACCESS_2_MEMORY_WRITE_BIT | VK_ACCESS_2_HOST_WRITE_BIT,
                 VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_2_HOST_BIT,
                 VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT | VK_ACCESS_2_HOST_READ_BIT);
}

Status copy_host_to_device(Runtime& rt, const void* src, VkBuffer dst, VkDeviceSize dst_offset, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(src);
  const VkDeviceSize chunk = std::min<VkDeviceSize>(kStagingChunkBytes, std::max<size_t>(bytes, 4));
  RECON_ASSIGN_OR_RETURN(PoolBuffer staging, rt.pool(MemoryRole::kStaging).acquire(chunk));
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min<size_t>(chunk, bytes - done);
    std::memcpy(staging.mapped(), p + done, n);
    RECON_RETURN_IF_ERROR(rt.context().run_once([&](VkCommandBuffer cmd) {
      full_barrier(cmd);
      VkBufferCopy region{staging.offset(), dst_offset + done, n};
      vkCmdCopyBuffer(cmd, staging.buffer(), dst, 1, &region);
      full_barrier(cmd);
    }));
    done += n;
  }
  return Status::ok();
}

Status copy_device_to_host(Runtime& rt, VkBuffer src, VkDeviceSize src_offset, void* dst, size_t bytes) {
  auto* p = static_cast<uint8_t*>(dst);
  const VkDeviceSize chunk = std::min<VkDeviceSize>(kStagingChunkBytes, std::max<size_t>(bytes, 4));
  RECON_ASSIGN_OR_RETURN(PoolBuffer staging, rt.pool(MemoryRole::kStaging).acquire(chunk));
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min<size_t>(chunk, bytes - done);
    RECON_RETURN_IF_ERROR(rt.context().run_once([&](VkCommandBuffer cmd) {
      full_barrier(cmd);
      VkBufferCopy region{src_offset + done, staging.offset(), n};
      vkCmdCopyBuffer(cmd, src, staging.buffer(), 1, &region);
      full_barrier(cmd);
    }));
    std::memcpy(p + done, staging.mapped(), n);
    done += n;
  }
  return Status::ok();
}

}  // namespace recon::gpu
