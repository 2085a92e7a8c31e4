// Times work submitted to the compute queue with two timestamp queries, written by tiny command
// buffers submitted just before and just after it. The first one waits on a host-signalled gate,
// so the work is queued in full before the device starts it: host submission time stays out of
// the figure. Where the queue has no timestamps it falls back to wall time from opening the gate
// to completion. Benchmark-only: it must not be used inside the runtime.
#pragma once

#include <vulkan/vulkan.h>

#include <functional>
#include <memory>

#include "gpu/context.h"
#include "gpu/status.h"

namespace recon::bench {

class GpuTimer {
 public:
  static Result<std::unique_ptr<GpuTimer>> create(gpu::Context& context);
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;

  // `submit` must submit the work to the compute queue and return without waiting for it.
  // Returns the device seconds between the two timestamps, once all of it has completed.
  Result<double> time(const std::function<Status()>& submit);

  bool uses_timestamps() const { return valid_mask_ != 0; }

 private:
  explicit GpuTimer(gpu::Context& context) : context_(context) {}
  Status init();
  Status submit_stamp(VkCommandBuffer cmd, bool gated, VkFence fence);

  gpu::Context& context_;
  uint64_t valid_mask_ = 0;  // timestampValidBits as a mask; 0 when the queue has none
  double period_ns_ = 1;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer begin_ = VK_NULL_HANDLE, end_ = VK_NULL_HANDLE;
  VkSemaphore gate_ = VK_NULL_HANDLE;  // timeline; the host signals it once everything is queued
  uint64_t gate_value_ = 0;
  VkFence done_ = VK_NULL_HANDLE;
};

}  // namespace recon::bench
