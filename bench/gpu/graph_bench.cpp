// Per-dispatch overhead of a replayed graph: N tiny fills (256 f32 each) recorded once and
// replayed with Graph::run(), host wall time from submit to completion. Two shapes: "chained"
// fills one tensor N times (the graph puts a barrier between every pair, as a model's dependent
// layers need) and "independent" fills N tensors (no barriers). Baseline, interleaved in the
// same benchmark: the same N dispatches as N Context::run_once submissions.
#include <chrono>
#include <limits>
#include <vector>

#include "bench/gpu/bench_util.h"
#include "gpu/graph.h"
#include "gpu/ops/elementwise_basic.h"
#include "gpu/transfer.h"
#include "gpu/vk_check.h"

namespace recon::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kElements = 256;

// Mirrors fill.comp's push constants (and ops::fill's private struct).
struct FillPush {
  uint32_t n;
  float value;
};
static_assert(sizeof(FillPush) == 8);

// The baseline: one descriptor set per target tensor and one run_once per dispatch, each with
// the same edge barriers a graph submission has.
class RunOnceFills {
 public:
  RunOnceFills(gpu::Runtime& rt, const std::vector<gpu::Tensor>& targets) : rt_(rt), targets_(targets) {}
  ~RunOnceFills() {
    if (pool_) vkDestroyDescriptorPool(rt_.context().device(), pool_, nullptr);
  }
  RunOnceFills(const RunOnceFills&) = delete;
  RunOnceFills& operator=(const RunOnceFills&) = delete;

  Status init() {
    RECON_ASSIGN_OR_RETURN(pipeline_, rt_.pipelines().get("fill_f32"));
    VkDevice dev = rt_.context().device();
    const auto count = static_cast<uint32_t>(targets_.size());
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, count};
    VkDescriptorPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pool_info.maxSets = count;
    pool_info.poolSizeCount = 1;
    pool_info.pPoolSizes = &size;
    RECON_VK_RETURN_IF_ERROR(vkCreateDescriptorPool(dev, &pool_info, nullptr, &pool_));
    std::vector<VkDescriptorSetLayout> layouts(count, rt_.pipelines().set_layout());
    VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    alloc.descriptorPool = pool_;
    alloc.descriptorSetCount = count;
    alloc.pSetLayouts = layouts.data();
    sets_.resize(count);
    RECON_VK_RETURN_IF_ERROR(vkAllocateDescriptorSets(dev, &alloc, sets_.data()));
    for (uint32_t i = 0; i < count; ++i) {
      VkDescriptorBufferInfo info{targets_[i].buffer(), targets_[i].offset(), targets_[i].bytes()};
      VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      write.dstSet = sets_[i];
      write.dstBinding = 0;
      write.descriptorCount = 1;
      write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      write.pBufferInfo = &info;
      vkUpdateDescriptorSets(dev, 1, &write, 0, nullptr);
    }
    return Status::ok();
  }

  // Dispatch i writes targets[i % targets] with value i + 1, as the graph does.
  Status run(int dispatches) {
    const VkPipelineLayout layout = rt_.pipelines().layout();
    for (int i = 0; i < dispatches; ++i) {
      const VkDescriptorSet set = sets_[static_cast<size_t>(i) % sets_.size()];
      const FillPush push{static_cast<uint32_t>(kElements), static_cast<float>(i + 1)};
      RECON_RETURN_IF_ERROR(rt_.context().run_once([&](VkCommandBuffer cmd) {
        gpu::full_barrier(cmd);
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_->pipeline);
        vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
        vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push), &push);
        vkCmdDispatch(cmd, 1, 1, 1);
        gpu::full_barrier(cmd);
      }));
    }
    return Status::ok();
  }

 private:
  gpu::Runtime& rt_;
  const std::vector<gpu::Tensor>& targets_;
  const gpu::Pipeline* pipeline_ = nullptr;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorSet> sets_;
};

// Every target holds the value of the last dispatch that wrote it (catches dropped dispatches).
Status check_targets(gpu::Runtime& rt, const std::vector<gpu::Tensor>& targets, int dispatches) {
  std::vector<float> host(kElements);
  for (size_t t = 0; t < targets.size(); ++t) {
    RECON_RETURN_IF_ERROR(targets[t].download(rt, host.data(), host.size() * sizeof(float)));
    int last = static_cast<int>(t);
    while (last + static_cast<int>(targets.size()) < dispatches) last += static_cast<int>(targets.size());
    for (float v : host) {
      if (v != static_cast<float>(last + 1)) {
        return internal_error("target " + std::to_string(t) + " holds " + std::to_string(v) + ", expected " +
                              std::to_string(last + 1));
      }
    }
  }
  return Status::ok();
}

Status poison(gpu::Runtime& rt, std::vector<gpu::Tensor>& targets) {
  const std::vector<float> nan(kElements, std::numeric_limits<float>::quiet_NaN());
  for (gpu::Tensor& t : targets) RECON_RETURN_IF_ERROR(t.upload(rt, nan.data(), nan.size() * sizeof(float)));
  return Status::ok();
}

void graph_replay(benchmark::State& state, gpu::Runtime* rt, int dispatches, bool chained) {
  std::vector<gpu::Tensor> targets;
  for (int i = 0; i < (chained ? 1 : dispatches); ++i) {
    auto t = gpu::Tensor::empty(*rt, gpu::DType::kF32, {kElements});
    if (!t.is_ok()) return fail(state, t.status());
    targets.push_back(std::move(t).value());
  }
  gpu::Graph graph(*rt);
  for (int i = 0; i < dispatches; ++i) {
    Status s = gpu::ops::fill(graph, targets[static_cast<size_t>(i) % targets.size()], static_cast<float>(i + 1));
    if (!s.is_ok()) return fail(state, s);
  }
  RunOnceFills baseline(*rt, targets);
  // Untimed first runs: recording, and a check that every dispatch of both paths landed.
  Status prepared = [&]() -> Status {
    RECON_RETURN_IF_ERROR(baseline.init());
    RECON_RETURN_IF_ERROR(poison(*rt, targets));
    RECON_RETURN_IF_ERROR(graph.run());
    RECON_RETURN_IF_ERROR(check_targets(*rt, targets, dispatches).with_context("graph replay"));
    RECON_RETURN_IF_ERROR(poison(*rt, targets));
    RECON_RETURN_IF_ERROR(baseline.run(dispatches));
    return check_targets(*rt, targets, dispatches).with_context("run_once baseline");
  }();
  if (!prepared.is_ok()) return fail(state, prepared);

  Samples subject, base;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    Status s = graph.run();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!s.is_ok()) {
      fail(state, s);
      break;
    }
    state.SetIterationTime(seconds);
    subject.add(seconds);
    if (baseline_due(subject, base)) {
      const auto b0 = Clock::now();
      s = baseline.run(dispatches);
      if (!s.is_ok()) {
        fail(state, s.with_context("run_once baseline"));
        break;
      }
      base.add(std::chrono::duration<double>(Clock::now() - b0).count());
    }
  }
  if (state.error_occurred() || subject.count() == 0) return;

  state.counters["dispatches"] = dispatches;
  state.counters["barriers"] = static_cast<double>(graph.barrier_count());
  state.counters["us_per_replay"] = subject.median() * 1e6;
  state.counters["us_per_dispatch"] = subject.median() * 1e6 / dispatches;
  state.counters["baseline_us_per_dispatch"] = base.median() * 1e6 / dispatches;
  state.counters["ratio_vs_baseline"] = base.median() / subject.median();  // > 1: the replay is faster
}

}  // namespace

void register_graph_benchmarks(gpu::Runtime& rt) {
  for (bool chained : {true, false}) {
    for (int n : {1, 16, 256}) {
      if (n == 1 && !chained) continue;  // one dispatch has no dependencies either way
      const std::string name = std::string("graph_replay/fill256/") + (chained ? "chained" : "independent") +
                               "/dispatches:" + std::to_string(n);
      benchmark::RegisterBenchmark(name.c_str(), graph_replay, &rt, n, chained)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace recon::bench
