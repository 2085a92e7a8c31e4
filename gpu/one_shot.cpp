// OneShot: see one_shot.h.
#include "gpu/one_shot.h"

#include "gpu/context.h"
#include "gpu/vk_check.h"

namespace recon::gpu {

Result<std::unique_ptr<OneShot>> OneShot::create(VkDevice device, Queue& queue) {
  std::unique_ptr<OneShot> one(new OneShot(device, queue));
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT | VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool_info.queueFamilyIndex = queue.family;
  RECON_VK_RETURN_IF_ERROR(vkCreateCommandPool(device, &pool_info, nullptr, &one->pool_));
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  RECON_VK_RETURN_IF_ERROR(vkCreateFence(device, &fence_info, nullptr, &one->fence_));
  return one;
}

OneShot::~OneShot() {
  if (fence_ != VK_NULL_HANDLE) vkDestroyFence(device_, fence_, nullptr);
  if (pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(device_, pool_, nullptr);
}

Status OneShot::run(const std::function<void(VkCommandBuffer)>& record) {
  std::lock_guard lock(mutex_);
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  RECON_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(device_, &alloc, &cmd));
  struct Free {
    VkDevice d;
    VkCommandPool p;
    VkCommandBuffer c;
    ~Free() { vkFreeCommandBuffers(d, p, 1, &c); }
  } free_cmd{device_, pool_, cmd};

  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  RECON_VK_RETURN_IF_ERROR(vkBeginCommandBuffer(cmd, &begin));
  record(cmd);
  RECON_VK_RETURN_IF_ERROR(vkEndCommandBuffer(cmd));

  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd;
  {
    std::lock_guard qlock(queue_.mutex);
    RECON_VK_RETURN_IF_ERROR(vkQueueSubmit(queue_.queue, 1, &submit, fence_));
  }
  Status waited = RECON_VK(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX));
  vkResetFences(device_, 1, &fence_);
  return waited;
}

}  // namespace recon::gpu
