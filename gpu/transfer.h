// Host <-> device copies through the staging pool, in bounded chunks so a tensor of any size
// moves with a fixed amount of staging memory.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>

#include "gpu/status.h"

namespace recon::gpu {

class Runtime;

inline constexpr VkDeviceSize kStagingChunkBytes = VkDeviceSize{16} << 20;

Status copy_host_to_device(Runtime& rt, const void* src, VkBuffer dst, VkDeviceSize dst_offset, size_t bytes);
Status copy_device_to_host(Runtime& rt, VkBuffer src, VkDeviceSize src_offset, void* dst, size_t bytes);

// One global memory barrier: accesses `src_access` in `src_stage` before it happen-before and are
// visible to accesses `dst_access` in `dst_stage` after it.
void memory_barrier(VkCommandBuffer cmd, VkPipelineStageFlags2 src_stage, VkAccessFlags2 src_access,
                    VkPipelineStageFlags2 dst_stage, VkAccessFlags2 dst_access);

// A full memory barrier between everything before and everything after, including host access.
// Used at the edges of one-shot submissions and recorded graphs.
void full_barrier(VkCommandBuffer cmd);

}  // namespace recon::gpu
