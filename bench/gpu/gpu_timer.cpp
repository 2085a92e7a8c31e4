#include "bench/gpu/gpu_timer.h"

#include <chrono>
#include <vector>

#include "gpu/vk_check.h"

namespace recon::bench {
namespace {
// Long enough for any replay this suite records, short enough that a lost submission fails the
// benchmark instead of hanging it.
constexpr uint64_t kWaitTimeoutNs = uint64_t{120} * 1000 * 1000 * 1000;
}  // namespace

Result<std::unique_ptr<GpuTimer>> GpuTimer::create(gpu::Context& context) {
  std::unique_ptr<GpuTimer> t(new GpuTimer(context));
  RECON_RETURN_IF_ERROR(t->init());
  return t;
}

Status GpuTimer::init() {
  VkDevice dev = context_.device();
  const uint32_t family = context_.compute_queue().family;
  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(context_.physical_device(), &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(context_.physical_device(), &family_count, families.data());
  const uint32_t bits = family < family_count ? families[family].timestampValidBits : 0;
  valid_mask_ = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  period_ns_ = context_.caps().timestamp_period_ns > 0 ? context_.caps().timestamp_period_ns : 1.0;

  if (uses_timestamps()) {
    VkQueryPoolCreateInfo q{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    q.queryType = VK_QUERY_TYPE_TIMESTAMP;
    q.queryCount = 2;
    RECON_VK_RETURN_IF_ERROR(vkCreateQueryPool(dev, &q, nullptr, &queries_));
  }

  VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.queueFamilyIndex = family;
  RECON_VK_RETURN_IF_ERROR(vkCreateCommandPool(dev, &pool, nullptr, &command_pool_));
  VkCommandBuffer cmds[2];
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = command_pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 2;
  RECON_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(dev, &alloc, cmds));
  begin_ = cmds[0];
  end_ = cmds[1];

  // A timestamp at BOTTOM_OF_PIPE is written once every command submitted before it has
  // completed, so the two stamps bracket exactly the work submitted between them.
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  RECON_VK_RETURN_IF_ERROR(vkBeginCommandBuffer(begin_, &begin));
  if (uses_timestamps()) {
    vkCmdResetQueryPool(begin_, queries_, 0, 2);
    vkCmdWriteTimestamp(begin_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, 0);
  }
  RECON_VK_RETURN_IF_ERROR(vkEndCommandBuffer(begin_));
  RECON_VK_RETURN_IF_ERROR(vkBeginCommandBuffer(end_, &begin));
  if (uses_timestamps()) vkCmdWriteTimestamp(end_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, 1);
  RECON_VK_RETURN_IF_ERROR(vkEndCommandBuffer(end_));

  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo sem{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  sem.pNext = &type;
  RECON_VK_RETURN_IF_ERROR(vkCreateSemaphore(dev, &sem, nullptr, &gate_));
  VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  RECON_VK_RETURN_IF_ERROR(vkCreateFence(dev, &fence, nullptr, &done_));
  return Status::ok();
}

GpuTimer::~GpuTimer() {
  VkDevice dev = context_.device();
  if (done_) vkDestroyFence(dev, done_, nullptr);
  if (gate_) vkDestroySemaphore(dev, gate_, nullptr);
  if (command_pool_) vkDestroyCommandPool(dev, command_pool_, nullptr);
  if (queries_) vkDestroyQueryPool(dev, queries_, nullptr);
}

Status GpuTimer::submit_stamp(VkCommandBuffer cmd, bool gated, VkFence fence) {
  const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  VkTimelineSemaphoreSubmitInfo timeline{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  timeline.waitSemaphoreValueCount = 1;
  timeline.pWaitSemaphoreValues = &gate_value_;
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  if (gated) {
    submit.pNext = &timeline;
    submit.waitSemaphoreCount = 1;
    submit.pWaitSemaphores = &gate_;
    submit.pWaitDstStageMask = &wait_stage;
  }
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &cmd;
  gpu::Queue& q = context_.compute_queue();
  std::lock_guard lock(q.mutex);
  return RECON_VK(vkQueueSubmit(q.queue, 1, &submit, fence));
}

Result<double> GpuTimer::time(const std::function<Status()>& submit) {
  VkDevice dev = context_.device();
  ++gate_value_;
  RECON_RETURN_IF_ERROR(submit_stamp(begin_, /*gated=*/true, VK_NULL_HANDLE));
  // Whatever happens below, the gate must open and the fence must be waited for, or the queue
  // stays blocked and the command buffers stay pending.
  Status work = submit();
  Status end = submit_stamp(end_, /*gated=*/false, done_);

  VkSemaphoreSignalInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
  signal.semaphore = gate_;
  signal.value = gate_value_;
  const auto start = std::chrono::steady_clock::now();
  RECON_VK_RETURN_IF_ERROR(vkSignalSemaphore(dev, &signal));
  if (end.is_ok()) {
    end = RECON_VK(vkWaitForFences(dev, 1, &done_, VK_TRUE, kWaitTimeoutNs));
    RECON_VK_RETURN_IF_ERROR(vkResetFences(dev, 1, &done_));
  } else {
    gpu::Queue& q = context_.compute_queue();
    std::lock_guard lock(q.mutex);
    (void)vkQueueWaitIdle(q.queue);  // nothing to wait on but the queue itself
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!work.is_ok()) return work.with_context("submitting the timed work");
  if (!end.is_ok()) return end.with_context("waiting for the timed work");
  if (!uses_timestamps()) return wall_s;

  uint64_t stamps[2] = {};
  RECON_VK_RETURN_IF_ERROR(vkGetQueryPoolResults(dev, queries_, 0, 2, sizeof(stamps), stamps, sizeof(uint64_t),
                                                 VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  const uint64_t ticks = (stamps[1] - stamps[0]) & valid_mask_;
  return static_cast<double>(ticks) * period_ns_ * 1e-9;
}

}  // namespace recon::bench
