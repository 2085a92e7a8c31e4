#include "gpu/models/mast3r/mast3r_batch_runner.h"

#include <algorithm>

#include "gpu/transfer.h"
#include "gpu/vk_check.h"

namespace recon::gpu {

Mast3rBatchRunner::~Mast3rBatchRunner() {
  for (const Pending& p : pending_) (void)p.graph->wait(p.value);
  if (pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(rt_.context().device(), pool_, nullptr);
  if (span_pool_ != VK_NULL_HANDLE) vkDestroyQueryPool(rt_.context().device(), span_pool_, nullptr);
}

Status Mast3rBatchRunner::start_span(size_t command_buffers_out) {
  if (rt_.caps().timestamp_period_ns <= 0) return Status::ok();
  VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = static_cast<uint32_t>(1 + command_buffers_out);
  return RECON_VK(vkCreateQueryPool(rt_.context().device(), &qi, nullptr, &span_pool_));
}

void Mast3rBatchRunner::mark_span_start(VkCommandBuffer cmd) {
  if (span_pool_ == VK_NULL_HANDLE || span_queries_ != 0) return;
  // Later writes on the other queue are ordered after this by the timeline-semaphore waits.
  vkCmdResetQueryPool(cmd, span_pool_, 0, 1);
  vkCmdWriteTimestamp2(cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, span_pool_, 0);
  span_queries_ = 1;
}

void Mast3rBatchRunner::mark_span_end(VkCommandBuffer cmd) {
  if (span_pool_ == VK_NULL_HANDLE || span_queries_ == 0) return;
  vkCmdResetQueryPool(cmd, span_pool_, span_queries_, 1);
  vkCmdWriteTimestamp2(cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, span_pool_, span_queries_++);
}

Status Mast3rBatchRunner::read_span() {
  if (span_pool_ == VK_NULL_HANDLE || span_queries_ < 2) return Status::ok();
  std::vector<uint64_t> ticks(span_queries_);
  RECON_VK_RETURN_IF_ERROR(vkGetQueryPoolResults(rt_.context().device(), span_pool_, 0, span_queries_,
                                                 ticks.size() * sizeof(uint64_t), ticks.data(), sizeof(uint64_t),
                                                 VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  const uint64_t end = *std::max_element(ticks.begin() + 1, ticks.end());
  gpu_span_ms_ = end > ticks[0] ? static_cast<double>(end - ticks[0]) * rt_.caps().timestamp_period_ns * 1e-6 : 0;
  return Status::ok();
}

double Mast3rBatchRunner::elapsed_ms() const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
}

Result<VkCommandBuffer> Mast3rBatchRunner::begin_commands() {
  VkDevice dev = rt_.context().device();
  if (pool_ == VK_NULL_HANDLE) {
    VkCommandPoolCreateInfo info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    info.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
    info.queueFamilyIndex = rt_.context().compute_queue().family;  // the second queue is of the same family
    RECON_VK_RETURN_IF_ERROR(vkCreateCommandPool(dev, &info, nullptr, &pool_));
  }
  VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  alloc.commandPool = pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  RECON_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(dev, &alloc, &cmd));
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  RECON_VK_RETURN_IF_ERROR(vkBeginCommandBuffer(cmd, &begin));
  // Earlier work on the queue (the previous run of the graph we copy into) comes first.
  full_barrier(cmd);
  return cmd;
}

Status Mast3rBatchRunner::end_commands(VkCommandBuffer cmd) {
  full_barrier(cmd);
  return RECON_VK(vkEndCommandBuffer(cmd));
}

Status Mast3rBatchRunner::finish_previous(Graph& graph) {
  auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& p) { return p.graph == &graph; });
  if (it == pending_.end()) return Status::ok();
  RECON_RETURN_IF_ERROR(graph.wait(it->value));
  const StageTimes times = graph.timings();
  if (!it->append) it->timings->clear();
  it->timings->insert(it->timings->end(), times.begin(), times.end());
  if (it->done_ms != nullptr) *it->done_ms = elapsed_ms();
  pending_.erase(it);
  return Status::ok();
}

Status Mast3rBatchRunner::submit_encode(std::span<const ImageSource> images, EncodeStep& step) {
  if (step.encoder == nullptr) {  // ran before: its pair steps wait for nothing
    encode_values_.push_back(0);
    return Status::ok();
  }
  Mast3rEncoder& e = *step.encoder;
  const Tensor& in = e.input_u8();
  const VkDeviceSize image_bytes = in.bytes() / static_cast<size_t>(e.batch());
  RECON_ASSIGN_OR_RETURN(VkCommandBuffer before, begin_commands());
  mark_span_start(before);
  for (size_t i = 0; i < step.images.size(); ++i) {
    const ImageSource& src = images[step.images[i]];
    const VkBufferCopy region{src.offset, in.offset() + i * image_bytes, image_bytes};
    vkCmdCopyBuffer(before, src.buffer, in.buffer(), 1, &region);
  }
  RECON_RETURN_IF_ERROR(end_commands(before));
  in.invalidate_host();  // written by the copies, not by the graph
  RECON_ASSIGN_OR_RETURN(VkCommandBuffer after, begin_commands());
  const VkBufferCopy out{e.output().offset(), step.tokens.offset(), e.output().bytes()};
  vkCmdCopyBuffer(after, e.output().buffer(), step.tokens.buffer(), 1, &out);
  mark_span_end(after);
  RECON_RETURN_IF_ERROR(end_commands(after));

  RECON_RETURN_IF_ERROR(finish_previous(e.graph()));
  GraphSubmit how;
  // A lone encoder step has nothing to overlap with: the compute queue spares its pair step a
  // cross-queue semaphore hand-over.
  how.queue = overlap_encodes_ ? &rt_.context().second_compute_queue() : &rt_.context().compute_queue();
  how.before = before;
  how.after = after;
  RECON_ASSIGN_OR_RETURN(uint64_t value, e.graph().submit(how));
  encode_values_.push_back(value);
  pending_.push_back({&e.graph(), value, &step.timings, nullptr, false});
  return Status::ok();
}

Status Mast3rBatchRunner::submit_pair(const std::vector<EncodeStep>& encodes, PairStep& step) {
  Mast3rForward& f = *step.forward;
  GraphSubmit how;  // the compute queue
  RECON_ASSIGN_OR_RETURN(VkCommandBuffer before, begin_commands());
  mark_span_start(before);
  for (size_t b = 0; b < step.rows.size(); ++b) {
    for (int v = 0; v < 2; ++v) {
      const TokenRow& r = step.rows[b][v];
      if (r.step < 0 || r.step >= static_cast<int>(encode_values_.size())) {
        return internal_error("pair step reads encode step " + std::to_string(r.step) + " before it was submitted");
      }
      const Tensor& src = encodes[r.step].tokens;
      const Tensor& dst = f.enc_in(v);
      const VkDeviceSize row_bytes = dst.bytes() / step.rows.size();
      const VkBufferCopy region{src.offset() + r.row * row_bytes, dst.offset() + b * row_bytes, row_bytes};
      vkCmdCopyBuffer(before, src.buffer(), dst.buffer(), 1, &region);
      if (encodes[r.step].encoder == nullptr) continue;  // ran before this run
      const Graph& source_graph = encodes[r.step].encoder->graph();
      auto known = std::find_if(how.waits.begin(), how.waits.end(),
                                [&](const auto& w) { return w.first == source_graph.timeline(); });
      const uint64_t value = encode_values_[r.step];
      if (known == how.waits.end()) {
        how.waits.emplace_back(source_graph.timeline(), value);
      } else {
        known->second = std::max(known->second, value);
      }
    }
  }
  RECON_RETURN_IF_ERROR(end_commands(before));
  for (int v = 0; v < 2; ++v) f.enc_in(v).invalidate_host();  // written by the copies, not by the graph

  how.before = before;
  RECON_RETURN_IF_ERROR(finish_previous(f.graph()));
  RECON_ASSIGN_OR_RETURN(uint64_t value, f.graph().submit(how));
  pending_.push_back({&f.graph(), value, &step.timings, nullptr, false});

  // The output activations write the step's own tensors. Same queue: the output graph's leading
  // barrier orders it after the pair graph, and the pair graph's next run after it.
  const auto targets = step.outputs.list();
  for (size_t i = 0; i < targets.size(); ++i) {
    if (const std::optional<Arg>& slot = f.output_slot(i)) {
      RECON_ASSIGN_OR_RETURN(*targets[i], Tensor::empty(rt_, slot->dtype(), slot->shape()));
    }
  }
  RECON_ASSIGN_OR_RETURN(VkCommandBuffer after, begin_commands());
  mark_span_end(after);
  RECON_RETURN_IF_ERROR(end_commands(after));
  RECON_RETURN_IF_ERROR(finish_previous(f.output_graph()));
  RECON_RETURN_IF_ERROR(f.bind_outputs(step.outputs));
  GraphSubmit out;
  out.after = after;
  RECON_ASSIGN_OR_RETURN(value, f.output_graph().submit(out));
  pending_.push_back({&f.output_graph(), value, &step.timings, &step.done_ms, true});
  return Status::ok();
}

Status Mast3rBatchRunner::run(std::span<const ImageSource> images, std::vector<EncodeStep>& encodes,
                              std::vector<PairStep>& pairs) {
  start_ = std::chrono::steady_clock::now();
  RECON_RETURN_IF_ERROR(start_span(encodes.size() + pairs.size()));
  overlap_encodes_ = std::count_if(encodes.begin(), encodes.end(), [](const EncodeStep& e) { return e.encoder; }) > 1;
  size_t next_pair = 0;
  auto ready = [&](size_t j) {
    return next_pair < pairs.size() && pairs[next_pair].ready_after <= static_cast<int>(j);
  };
  if (!encodes.empty()) RECON_RETURN_IF_ERROR(submit_encode(images, encodes[0]));
  for (size_t j = 0; j < encodes.size(); ++j) {
    // The first pair of chunk j goes in before chunk j+1's encoder (whose submission may wait on the
    // host for chunk j's run), the others after it: the first queue always has a pair queued, and
    // while the host waits on a pair graph's previous run the second queue has an encoder to run.
    if (ready(j)) RECON_RETURN_IF_ERROR(submit_pair(encodes, pairs[next_pair++]));
    if (j + 1 < encodes.size()) RECON_RETURN_IF_ERROR(submit_encode(images, encodes[j + 1]));
    while (ready(j)) RECON_RETURN_IF_ERROR(submit_pair(encodes, pairs[next_pair++]));
  }
  if (next_pair != pairs.size()) return internal_error("pair steps not sorted by the encode step they need");
  while (!pending_.empty()) RECON_RETURN_IF_ERROR(finish_previous(*pending_.front().graph));
  return read_span();
}

}  // namespace recon::gpu
