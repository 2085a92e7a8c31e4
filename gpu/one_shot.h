// OneShot: records a command buffer, submits it to one queue and waits for it — for uploads,
// downloads, fetches and tests (model graphs use recorded, replayed command buffers instead).
// Each thread that needs one-shot work of its own owns one, on its own queue where the device has
// one, so that waiting on one (a copy out of a result) never waits behind another's work (the next
// batch on the compute queue).
// Thread safety: run() may be called from any thread; calls on one OneShot take turns.
#pragma once

#include <vulkan/vulkan.h>

#include <functional>
#include <memory>
#include <mutex>

#include "gpu/status.h"

namespace recon::gpu {

struct Queue;

class OneShot {
 public:
  // Submits to `queue` (Queue::mutex guards each submission); both must outlive the OneShot.
  static Result<std::unique_ptr<OneShot>> create(VkDevice device, Queue& queue);
  ~OneShot();
  OneShot(const OneShot&) = delete;
  OneShot& operator=(const OneShot&) = delete;

  Status run(const std::function<void(VkCommandBuffer)>& record);

 private:
  OneShot(VkDevice device, Queue& queue) : device_(device), queue_(queue) {}

  VkDevice device_;
  Queue& queue_;
  std::mutex mutex_;  // guards pool_ and fence_
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
};

}  // namespace recon::gpu
