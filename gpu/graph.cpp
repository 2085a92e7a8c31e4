#include "gpu/graph.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "gpu/dispatch_profile.h"
#include "gpu/graph_schedule.h"
#include "gpu/runtime.h"
#include "gpu/transfer.h"
#include "gpu/vk_check.h"

namespace recon::gpu {
namespace {
constexpr size_t kMaxRecordings = 4;
}  // namespace

struct Graph::Recording {
  std::vector<std::pair<VkBuffer, VkDeviceSize>> key;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool = VK_NULL_HANDLE;
  uint64_t last_submitted = 0;  // timeline value of its last submission
  // RECON_PROFILE_DISPATCHES: a timestamp before the first dispatch and after each one, and the
  // submission whose timestamps have not been collected yet (0: none).
  VkQueryPool profile_pool = VK_NULL_HANDLE;
  uint64_t profile_pending = 0;
  std::vector<size_t> order;  // dispatch indices in recorded order (gpu/graph_schedule.h)
};

Graph::Graph(Runtime& rt) : rt_(rt) {
  VkDevice dev = rt_.context().device();
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.queueFamilyIndex = rt_.context().compute_queue().family;
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  (void)vkCreateCommandPool(dev, &pool_info, nullptr, &command_pool_);

  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo sem{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  sem.pNext = &type;
  (void)vkCreateSemaphore(dev, &sem, nullptr, &timeline_);
}

Graph::~Graph() {
  VkDevice dev = rt_.context().device();
  if (timeline_value_ > 0) (void)wait(timeline_value_);
  for (auto& r : recordings_) {
    if (r->descriptor_pool) vkDestroyDescriptorPool(dev, r->descriptor_pool, nullptr);
    if (r->profile_pool) vkDestroyQueryPool(dev, r->profile_pool, nullptr);
  }
  recordings_.clear();
  if (query_pool_) vkDestroyQueryPool(dev, query_pool_, nullptr);
  if (command_pool_) vkDestroyCommandPool(dev, command_pool_, nullptr);
  if (timeline_) vkDestroySemaphore(dev, timeline_, nullptr);
}

std::array<uint32_t, 3> Graph::grid_1d(uint64_t workgroups) {
  constexpr uint64_t kMaxX = 65535;
  if (workgroups <= kMaxX) return {static_cast<uint32_t>(std::max<uint64_t>(workgroups, 1)), 1, 1};
  const uint64_t y = (workgroups + kMaxX - 1) / kMaxX;
  return {static_cast<uint32_t>(kMaxX), static_cast<uint32_t>(y), 1};
}

void Graph::timestamp(std::string label) {
  marks_.push_back({dispatches_.size(), std::move(label)});
}

std::vector<uint64_t> Graph::read_ticks(VkQueryPool pool, size_t count) const {
  std::vector<uint64_t> ticks(count);
  if (vkGetQueryPoolResults(rt_.context().device(), pool, 0, static_cast<uint32_t>(count), count * sizeof(uint64_t),
                            ticks.data(), sizeof(uint64_t), VK_QUERY_RESULT_64_BIT) != VK_SUCCESS) {
    ticks.clear();
  }
  return ticks;
}

std::vector<std::pair<std::string, double>> Graph::timings() {
  std::vector<std::pair<std::string, double>> out;
  if (query_pool_ == VK_NULL_HANDLE || marks_.empty()) return out;
  const std::vector<uint64_t> ticks = read_ticks(query_pool_, marks_.size() + 1);
  if (ticks.empty()) return out;
  const double ns_per_tick = rt_.caps().timestamp_period_ns;
  for (size_t i = 0; i < marks_.size(); ++i) {
    out.emplace_back(marks_[i].label, static_cast<double>(ticks[i + 1] - ticks[i]) * ns_per_tick * 1e-6);
  }
  return out;
}

Arg Graph::add_slot(std::string name, DType dtype, Shape shape) {
  slots_.push_back({std::move(name), dtype, shape, Tensor()});
  return Arg::slot(static_cast<uint32_t>(slots_.size() - 1), dtype, std::move(shape));
}

Status Graph::bind(const Arg& slot, const Tensor& tensor) {
  if (!slot.is_slot() || slot.slot_index() >= slots_.size()) return invalid_argument("bind: not a slot of this graph");
  SlotInfo& s = slots_[slot.slot_index()];
  if (!tensor.defined()) return invalid_argument("bind: slot " + s.name + " given an undefined tensor");
  if (tensor.dtype() != s.dtype || tensor.shape() != s.shape) {
    return invalid_argument("bind: slot " + s.name + " expects " + dtype_name(s.dtype) + shape_string(s.shape) +
                            ", got " + dtype_name(tensor.dtype()) + shape_string(tensor.shape()));
  }
  s.bound = tensor;
  return Status::ok();
}

Status Graph::bind(std::string_view slot_name, const Tensor& tensor) {
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].name == slot_name) return bind(Arg::slot(i, slots_[i].dtype, slots_[i].shape), tensor);
  }
  return not_found("graph has no slot named " + std::string(slot_name));
}

Arg Graph::scratch(std::string_view name, DType dtype, int64_t numel) {
  const std::string slot_name = "scratch:" + std::string(name);
  for (uint32_t i : scratch_slots_) {
    SlotInfo& s = slots_[i];
    if (s.name == slot_name && s.dtype == dtype) {
      s.shape[0] = std::max(s.shape[0], numel);
      return Arg::slot(i, dtype, {numel});
    }
  }
  scratch_slots_.push_back(static_cast<uint32_t>(slots_.size()));
  return add_slot(slot_name, dtype, {numel});
}

uint64_t Graph::scratch_bytes() const {
  uint64_t bytes = 0;
  for (uint32_t i : scratch_slots_) bytes += shape_numel(slots_[i].shape) * dtype_size(slots_[i].dtype);
  return bytes;
}

Status Graph::bind_scratch() {
  for (uint32_t i : scratch_slots_) {
    SlotInfo& s = slots_[i];
    if (s.bound.defined() && s.bound.shape() == s.shape) continue;
    if (s.bound.defined()) RECON_RETURN_IF_ERROR(wait(timeline_value_));  // a run may still use it
    RECON_ASSIGN_OR_RETURN(s.bound, Tensor::zeros(rt_, s.dtype, s.shape));
  }
  return Status::ok();
}

Status Graph::dispatch(std::string_view shader, std::span<const uint32_t> spec, std::initializer_list<Binding> bindings,
                       const void* push, uint32_t push_size, std::array<uint32_t, 3> groups) {
  if (bindings.size() > kMaxBindings) return invalid_argument("dispatch with more than 8 bindings");
  if (push_size > kMaxPushConstantBytes) return invalid_argument("push constants exceed 128 bytes");
  const auto& limits = rt_.caps().max_workgroup_count;
  for (int i = 0; i < 3; ++i) {
    if (groups[i] == 0 || groups[i] > limits[i]) {
      return invalid_argument("dispatch of " + std::string(shader) + ": workgroup count " + std::to_string(groups[i]) +
                              " outside 1.." + std::to_string(limits[i]));
    }
  }
  for (const Binding& b : bindings) {
    if (b.arg.bytes() > rt_.caps().max_storage_buffer_range) {
      return invalid_argument("dispatch of " + std::string(shader) + ": operand of " + std::to_string(b.arg.bytes()) +
                              " bytes exceeds maxStorageBufferRange; the op must split it");
    }
  }
  RECON_ASSIGN_OR_RETURN(const Pipeline* pipeline, rt_.pipelines().get(shader, spec));
  Dispatch d;
  d.pipeline = pipeline;
  d.bindings.assign(bindings.begin(), bindings.end());
  if (push_size) std::memcpy(d.push.data(), push, push_size);
  d.push_size = push_size;
  d.groups = groups;
  dispatches_.push_back(std::move(d));
  return Status::ok();
}

Result<Graph::Resolved> Graph::resolve(const Binding& b) const {
  const Tensor* t = &b.arg.tensor();
  if (b.arg.is_slot()) {
    const SlotInfo& s = slots_[b.arg.slot_index()];
    if (!s.bound.defined()) return invalid_argument("graph slot " + s.name + " is not bound");
    t = &s.bound;
  }
  // Storage-buffer ranges must be non-zero; round up to a whole word for 16-bit and 8-bit data.
  VkDeviceSize range = std::max<VkDeviceSize>((t->bytes() + 3) / 4 * 4, 4);
  return Resolved{t->buffer(), t->offset(), range};
}

Result<Graph::Recording*> Graph::recording_for_current_bindings() {
  RECON_RETURN_IF_ERROR(bind_scratch());
  std::vector<std::pair<VkBuffer, VkDeviceSize>> key;
  for (const SlotInfo& s : slots_) {
    if (!s.bound.defined()) return invalid_argument("graph slot " + s.name + " is not bound");
    key.emplace_back(s.bound.buffer(), s.bound.offset());
  }
  for (auto it = recordings_.begin(); it != recordings_.end(); ++it) {
    if ((*it)->key == key) {
      recordings_.splice(recordings_.begin(), recordings_, it);
      return recordings_.front().get();
    }
  }
  if (recordings_.size() >= kMaxRecordings) {
    Recording* oldest = recordings_.back().get();
    RECON_RETURN_IF_ERROR(wait(oldest->last_submitted));
    VkDevice dev = rt_.context().device();
    vkFreeCommandBuffers(dev, command_pool_, 1, &oldest->cmd);
    vkDestroyDescriptorPool(dev, oldest->descriptor_pool, nullptr);
    if (oldest->profile_pool) vkDestroyQueryPool(dev, oldest->profile_pool, nullptr);
    recordings_.pop_back();
  }
  auto rec = std::make_unique<Recording>();
  rec->key = std::move(key);
  RECON_RETURN_IF_ERROR(record(*rec));
  recordings_.push_front(std::move(rec));
  return recordings_.front().get();
}

Status Graph::record(Recording& rec) {
  VkDevice dev = rt_.context().device();
  size_t binding_total = 0;
  for (const auto& d : dispatches_) binding_total += d.bindings.size();
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                            static_cast<uint32_t>(std::max<size_t>(binding_total, 1))};
  VkDescriptorPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pool_info.maxSets = static_cast<uint32_t>(std::max<size_t>(dispatches_.size(), 1));
  pool_info.poolSizeCount = 1;
  pool_info.pPoolSizes = &size;
  RECON_VK_RETURN_IF_ERROR(vkCreateDescriptorPool(dev, &pool_info, nullptr, &rec.descriptor_pool));

  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = command_pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  RECON_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(dev, &alloc, &rec.cmd));

  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  RECON_VK_RETURN_IF_ERROR(vkBeginCommandBuffer(rec.cmd, &begin));
  // Uploads and earlier submissions wrote our inputs: make them visible first.
  full_barrier(rec.cmd);
  const bool timed = !marks_.empty() && rt_.caps().timestamp_period_ns > 0;
  if (timed) {
    if (query_pool_ == VK_NULL_HANDLE) {
      VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
      qi.queryCount = static_cast<uint32_t>(marks_.size() + 1);
      RECON_VK_RETURN_IF_ERROR(vkCreateQueryPool(dev, &qi, nullptr, &query_pool_));
    }
    vkCmdResetQueryPool(rec.cmd, query_pool_, 0, static_cast<uint32_t>(marks_.size() + 1));
  }
  size_t next_mark = 0;
  const bool profiled = dispatch_profiling_enabled() && rt_.caps().timestamp_period_ns > 0;
  if (profiled) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = static_cast<uint32_t>(dispatches_.size() + 1);
    RECON_VK_RETURN_IF_ERROR(vkCreateQueryPool(dev, &qi, nullptr, &rec.profile_pool));
    vkCmdResetQueryPool(rec.cmd, rec.profile_pool, 0, qi.queryCount);
    vkCmdWriteTimestamp2(rec.cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, rec.profile_pool, 0);
  }

  // Resolve every operand, then choose the recording order; marks are fences, so a mark's
  // position in recorded order equals its position in program order.
  std::vector<std::vector<Resolved>> resolved(dispatches_.size());
  std::vector<std::vector<BufferAccess>> accesses(dispatches_.size());
  for (size_t di = 0; di < dispatches_.size(); ++di) {
    for (const Binding& b : dispatches_[di].bindings) {
      RECON_ASSIGN_OR_RETURN(Resolved r, resolve(b));
      resolved[di].push_back(r);
      if (b.access != Access::kWrite) accesses[di].push_back({r.buffer, r.offset, r.offset + r.range, false});
      if (b.access != Access::kRead) accesses[di].push_back({r.buffer, r.offset, r.offset + r.range, true});
    }
  }
  if (graph_reordering_enabled()) {
    std::vector<size_t> fences;
    for (const Mark& m : marks_) fences.push_back(m.before_dispatch);
    rec.order = order_by_dependency_level(accesses, fences);
  } else {
    rec.order.resize(dispatches_.size());
    std::iota(rec.order.begin(), rec.order.end(), size_t{0});
  }

  PipelineRegistry& reg = rt_.pipelines();
  VkDescriptorSetLayout layout = reg.set_layout();
  std::vector<BufferAccess> since_barrier;
  size_t barriers = 0;
  for (size_t pos = 0; pos < rec.order.size(); ++pos) {
    const size_t di = rec.order[pos];
    const Dispatch& d = dispatches_[di];
    while (timed && next_mark < marks_.size() && marks_[next_mark].before_dispatch == pos) {
      vkCmdWriteTimestamp2(rec.cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, query_pool_,
                           static_cast<uint32_t>(next_mark));
      ++next_mark;
    }
    VkDescriptorSetAllocateInfo set_alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    set_alloc.descriptorPool = rec.descriptor_pool;
    set_alloc.descriptorSetCount = 1;
    set_alloc.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    RECON_VK_RETURN_IF_ERROR(vkAllocateDescriptorSets(dev, &set_alloc, &set));

    std::vector<VkDescriptorBufferInfo> infos(d.bindings.size());
    std::vector<VkWriteDescriptorSet> writes(d.bindings.size());
    for (size_t i = 0; i < d.bindings.size(); ++i) {
      const Resolved& r = resolved[di][i];
      infos[i] = {r.buffer, r.offset, r.range};
      writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[i].dstSet = set;
      writes[i].dstBinding = static_cast<uint32_t>(i);
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    vkUpdateDescriptorSets(dev, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);

    // A barrier only where this dispatch conflicts with one since the last barrier: touches what it
    // wrote (RAW, WAW) or writes what it read (WAR).
    const std::vector<BufferAccess>& mine = accesses[di];
    const bool hazard = std::any_of(mine.begin(), mine.end(), [&](const BufferAccess& a) {
      return std::any_of(since_barrier.begin(), since_barrier.end(),
                         [&](const BufferAccess& p) { return p.conflicts(a); });
    });
    if (hazard) {
      memory_barrier(rec.cmd, VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
                     VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                     VK_ACCESS_2_SHADER_STORAGE_READ_BIT | VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT);
      since_barrier.clear();
      ++barriers;
    }
    since_barrier.insert(since_barrier.end(), mine.begin(), mine.end());

    vkCmdBindPipeline(rec.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline->pipeline);
    vkCmdBindDescriptorSets(rec.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, reg.layout(), 0, 1, &set, 0, nullptr);
    if (d.push_size) {
      vkCmdPushConstants(rec.cmd, reg.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, d.push_size, d.push.data());
    }
    vkCmdDispatch(rec.cmd, d.groups[0], d.groups[1], d.groups[2]);
    if (profiled) {
      vkCmdWriteTimestamp2(rec.cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, rec.profile_pool,
                           static_cast<uint32_t>(pos + 1));
    }
  }
  if (timed) {
    while (next_mark < marks_.size()) {
      vkCmdWriteTimestamp2(rec.cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, query_pool_,
                           static_cast<uint32_t>(next_mark));
      ++next_mark;
    }
    vkCmdWriteTimestamp2(rec.cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, query_pool_,
                         static_cast<uint32_t>(marks_.size()));
  }
  // Results are read by transfers and the host after the graph.
  full_barrier(rec.cmd);
  RECON_VK_RETURN_IF_ERROR(vkEndCommandBuffer(rec.cmd));
  ++record_count_;
  last_barrier_count_ = barriers;
  return Status::ok();
}

Result<uint64_t> Graph::submit() {
  return submit(GraphSubmit{});
}

Result<uint64_t> Graph::submit(const GraphSubmit& how) {
  if (command_pool_ == VK_NULL_HANDLE || timeline_ == VK_NULL_HANDLE) {
    return internal_error("graph command pool or timeline semaphore could not be created");
  }
  RECON_ASSIGN_OR_RETURN(Recording * rec, recording_for_current_bindings());
  // A command buffer may not be pending twice without SIMULTANEOUS_USE: wait for its last run.
  RECON_RETURN_IF_ERROR(wait(rec->last_submitted));

  const uint64_t signal = timeline_value_ + 1;
  std::vector<VkSemaphoreSubmitInfo> waits;
  for (const auto& [semaphore, value] : how.waits) {
    VkSemaphoreSubmitInfo w{VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO};
    w.semaphore = semaphore;
    w.value = value;
    w.stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
    waits.push_back(w);
  }
  std::vector<VkCommandBufferSubmitInfo> cmds;
  for (VkCommandBuffer c : {how.before, rec->cmd, how.after}) {
    if (c == VK_NULL_HANDLE) continue;
    VkCommandBufferSubmitInfo ci{VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO};
    ci.commandBuffer = c;
    cmds.push_back(ci);
  }
  VkSemaphoreSubmitInfo signal_info{VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO};
  signal_info.semaphore = timeline_;
  signal_info.value = signal;
  signal_info.stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT;
  VkSubmitInfo2 submit{VK_STRUCTURE_TYPE_SUBMIT_INFO_2};
  submit.waitSemaphoreInfoCount = static_cast<uint32_t>(waits.size());
  submit.pWaitSemaphoreInfos = waits.data();
  submit.commandBufferInfoCount = static_cast<uint32_t>(cmds.size());
  submit.pCommandBufferInfos = cmds.data();
  submit.signalSemaphoreInfoCount = 1;
  submit.pSignalSemaphoreInfos = &signal_info;
  Queue& q = how.queue != nullptr ? *how.queue : rt_.context().compute_queue();
  {
    std::lock_guard lock(q.mutex);
    RECON_VK_RETURN_IF_ERROR(vkQueueSubmit2(q.queue, 1, &submit, VK_NULL_HANDLE));
  }
  timeline_value_ = signal;
  rec->last_submitted = signal;
  if (rec->profile_pool != VK_NULL_HANDLE) rec->profile_pending = signal;

  // Cached host copies of anything this graph writes are stale from now on.
  for (const Dispatch& d : dispatches_) {
    for (const Binding& b : d.bindings) {
      if (b.access == Access::kRead) continue;
      if (b.arg.is_slot()) {
        slots_[b.arg.slot_index()].bound.invalidate_host();
      } else {
        b.arg.tensor().invalidate_host();
      }
    }
  }
  return signal;
}

Status Graph::wait(uint64_t value) {
  if (value == 0) return Status::ok();
  VkSemaphoreWaitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
  info.semaphoreCount = 1;
  info.pSemaphores = &timeline_;
  info.pValues = &value;
  RECON_RETURN_IF_ERROR(RECON_VK(vkWaitSemaphores(rt_.context().device(), &info, UINT64_MAX)));
  for (auto& rec : recordings_) {
    if (rec->profile_pending != 0 && rec->profile_pending <= value) collect_profile(*rec);
  }
  return Status::ok();
}

void Graph::collect_profile(Recording& rec) {
  rec.profile_pending = 0;
  const std::vector<uint64_t> ticks = read_ticks(rec.profile_pool, dispatches_.size() + 1);
  if (ticks.empty()) return;  // a diagnostic: a run whose timestamps are unavailable is not counted
  const double ms_per_tick = rt_.caps().timestamp_period_ns * 1e-6;
  for (size_t i = 0; i < rec.order.size(); ++i) {
    const Dispatch& d = dispatches_[rec.order[i]];
    std::array<uint32_t, 3> push{};
    std::memcpy(push.data(), d.push.data(), std::min<size_t>(d.push_size, sizeof(push)));
    add_dispatch_time(d.pipeline->key, d.groups, push, static_cast<double>(ticks[i + 1] - ticks[i]) * ms_per_tick);
  }
}

Status Graph::run() {
  RECON_ASSIGN_OR_RETURN(uint64_t value, submit());
  return wait(value);
}

}  // namespace recon::gpu
