// Device-to-device copy bandwidth: the shader copy (ops::copy, replayed as a recorded graph)
// against vkCmdCopyBuffer (a recorded command buffer), both with R copies of the same buffer per
// replay and the same barrier between consecutive copies, timed with GPU timestamps (GpuTimer).
// GB/s counts bytes read plus bytes written, 1 GB = 1e9 bytes. Both paths are checked against
// the random source once per size before any timing. Sizes whose source and destination fit in
// the GPU's last-level cache (H100: 50 MB L2) measure that cache, not device memory; the barrier
// between copies dominates the smallest sizes on a fast GPU, as it does in a dependent chain.
#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <vector>

#include "bench/gpu/bench_util.h"
#include "bench/gpu/gpu_timer.h"
#include "gpu/graph.h"
#include "gpu/ops/elementwise_basic.h"
#include "gpu/transfer.h"
#include "gpu/vk_check.h"

namespace recon::bench {
namespace {

constexpr uint32_t kPoison = 0xABABABABu;

// Source and destination of one size, with random contents. Kept between the framework's calls
// of one benchmark (it calls a benchmark several times while it sizes the iteration count), so
// a 1 GiB source is uploaded and checked once.
struct CopyBuffers {
  uint64_t bytes = 0;
  gpu::Tensor src, dst;
  std::vector<uint32_t> host;  // the source's contents until both paths were checked
  bool checked = false;
};
std::unique_ptr<CopyBuffers> g_buffers;  // at most one size at a time; released by main()

Result<CopyBuffers*> buffers_for(gpu::Runtime& rt, uint64_t bytes) {
  if (g_buffers && g_buffers->bytes == bytes) return g_buffers.get();
  // Free the previous size first, back to the driver, so each size starts from fresh blocks.
  // (Seen on an H200, 2026-11-22: a 1 GiB pair copied at ~3.8 TB/s when it was the first size
  // run and ~1.6 TB/s after smaller sizes, with or without this trim; cause not established.)
  g_buffers.reset();
  rt.pool(gpu::MemoryRole::kActivations).trim(/*all=*/true);
  auto b = std::make_unique<CopyBuffers>();
  b->bytes = bytes;
  b->host.resize(bytes / 4);
  uint64_t x = 0x9E3779B97F4A7C15ull ^ bytes;  // splitmix64: fresh, non-constant data per size
  for (uint32_t& w : b->host) {
    x += 0x9E3779B97F4A7C15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    w = static_cast<uint32_t>(z ^ (z >> 31));
  }
  const gpu::Shape shape{static_cast<int64_t>(bytes / 4)};
  RECON_ASSIGN_OR_RETURN(b->src, gpu::Tensor::from_host(rt, gpu::DType::kI32, shape, b->host.data(), bytes));
  RECON_ASSIGN_OR_RETURN(b->dst, gpu::Tensor::empty(rt, gpu::DType::kI32, shape));
  g_buffers = std::move(b);
  return g_buffers.get();
}

// R vkCmdCopyBuffer of src to dst in one reusable command buffer, with the graph's edge barriers
// and a transfer barrier between copies (the graph puts a compute barrier between its copies).
class TransferCopies {
 public:
  explicit TransferCopies(gpu::Context& ctx) : ctx_(ctx) {}
  ~TransferCopies() {
    if (pool_) vkDestroyCommandPool(ctx_.device(), pool_, nullptr);
  }
  TransferCopies(const TransferCopies&) = delete;
  TransferCopies& operator=(const TransferCopies&) = delete;

  Status record(const gpu::Tensor& src, const gpu::Tensor& dst, uint64_t bytes, int reps) {
    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.queueFamilyIndex = ctx_.compute_queue().family;
    RECON_VK_RETURN_IF_ERROR(vkCreateCommandPool(ctx_.device(), &pool_info, nullptr, &pool_));
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    RECON_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(ctx_.device(), &alloc, &cmd_));
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    RECON_VK_RETURN_IF_ERROR(vkBeginCommandBuffer(cmd_, &begin));
    gpu::full_barrier(cmd_);
    const VkBufferCopy region{src.offset(), dst.offset(), bytes};
    for (int r = 0; r < reps; ++r) {
      if (r > 0) {
        gpu::memory_barrier(cmd_, VK_PIPELINE_STAGE_2_COPY_BIT, VK_ACCESS_2_TRANSFER_WRITE_BIT,
                            VK_PIPELINE_STAGE_2_COPY_BIT,
                            VK_ACCESS_2_TRANSFER_READ_BIT | VK_ACCESS_2_TRANSFER_WRITE_BIT);
      }
      vkCmdCopyBuffer(cmd_, src.buffer(), dst.buffer(), 1, &region);
    }
    gpu::full_barrier(cmd_);
    return RECON_VK(vkEndCommandBuffer(cmd_));
  }

  // Submits without waiting (GpuTimer waits); the previous submission must have completed.
  Status submit() {
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd_;
    gpu::Queue& q = ctx_.compute_queue();
    std::lock_guard lock(q.mutex);
    return RECON_VK(vkQueueSubmit(q.queue, 1, &submit, VK_NULL_HANDLE));
  }

 private:
  gpu::Context& ctx_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
};

Status poison(gpu::Runtime& rt, const gpu::Tensor& t) {
  return rt.context().run_once([&](VkCommandBuffer cmd) {
    gpu::full_barrier(cmd);
    vkCmdFillBuffer(cmd, t.buffer(), t.offset(), t.bytes(), kPoison);
    gpu::full_barrier(cmd);
  });
}

Status check_copy(gpu::Runtime& rt, const CopyBuffers& b, const char* path) {
  std::vector<uint32_t> got(b.host.size());
  RECON_RETURN_IF_ERROR(b.dst.download(rt, got.data(), b.bytes));
  if (std::memcmp(got.data(), b.host.data(), b.bytes) != 0) {
    const auto first = std::mismatch(got.begin(), got.end(), b.host.begin()).first - got.begin();
    return internal_error(std::string(path) + " copy of " + size_label(b.bytes) + " differs from the source at word " +
                          std::to_string(first));
  }
  return Status::ok();
}

void copy_bandwidth(benchmark::State& state, gpu::Runtime* rt, uint64_t bytes, int reps) {
  auto buffers = buffers_for(*rt, bytes);
  if (!buffers.is_ok()) return fail(state, buffers.status().with_context("allocating " + size_label(bytes) + " x2"));
  CopyBuffers& b = **buffers;

  gpu::Graph graph(*rt);
  for (int r = 0; r < reps; ++r) {
    Status s = gpu::ops::copy(graph, b.src, b.dst);
    if (!s.is_ok()) return fail(state, s);
  }
  TransferCopies transfer(rt->context());
  Status s = transfer.record(b.src, b.dst, bytes, reps);
  if (!s.is_ok()) return fail(state, s);
  auto timer = GpuTimer::create(rt->context());
  if (!timer.is_ok()) return fail(state, timer.status());
  auto run_shader = [&]() -> Status { return graph.submit().status(); };
  auto run_transfer = [&]() -> Status { return transfer.submit(); };

  // Untimed: records the graph, and (once per size) checks that both paths copy every byte.
  Status prepared = [&]() -> Status {
    if (!b.checked) RECON_RETURN_IF_ERROR(poison(*rt, b.dst));
    RECON_RETURN_IF_ERROR((*timer)->time(run_shader).status());
    if (b.checked) return Status::ok();
    RECON_RETURN_IF_ERROR(check_copy(*rt, b, "shader"));
    RECON_RETURN_IF_ERROR(poison(*rt, b.dst));
    RECON_RETURN_IF_ERROR((*timer)->time(run_transfer).status());
    RECON_RETURN_IF_ERROR(check_copy(*rt, b, "vkCmdCopyBuffer"));
    b.checked = true;
    b.host = {};
    return Status::ok();
  }();
  if (!prepared.is_ok()) return fail(state, prepared);

  Samples subject, base;
  for (auto _ : state) {
    auto t = (*timer)->time(run_shader);
    if (!t.is_ok()) {
      fail(state, t.status());
      break;
    }
    state.SetIterationTime(*t);
    subject.add(*t);
    if (baseline_due(subject, base)) {
      auto tb = (*timer)->time(run_transfer);
      if (!tb.is_ok()) {
        fail(state, tb.status().with_context("vkCmdCopyBuffer baseline"));
        break;
      }
      base.add(*tb);
    }
  }
  if (state.error_occurred() || subject.count() == 0) return;

  const double moved = 2.0 * static_cast<double>(bytes) * reps;  // read + written
  const double shader_gbps = moved / subject.median() / 1e9;
  const double transfer_gbps = moved / base.median() / 1e9;
  state.counters["MiB"] = static_cast<double>(bytes) / kMiB;
  state.counters["copies_per_replay"] = reps;
  state.counters["GB/s"] = shader_gbps;
  state.counters["baseline_GB/s"] = transfer_gbps;
  state.counters["ratio_vs_baseline"] = shader_gbps / transfer_gbps;  // > 1: the shader copy is faster
  state.counters["timestamps"] = (*timer)->uses_timestamps() ? 1 : 0;
}

}  // namespace

void release_copy_buffers() {
  g_buffers.reset();
}

void register_copy_benchmarks(gpu::Runtime& rt, const SuiteOptions& options) {
  const gpu::Capabilities& caps = rt.caps();
  const bool cpu_device = caps.device_type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  std::vector<uint64_t> mib = options.copy_mib;
  if (mib.empty())
    mib = cpu_device ? std::vector<uint64_t>{1, 4, 16, 64} : std::vector<uint64_t>{1, 4, 16, 64, 256, 1024};
  const uint64_t rep_bytes = (options.copy_rep_mib ? options.copy_rep_mib : (cpu_device ? 64 : 1024)) * kMiB;

  // One binding must stay within maxStorageBufferRange (128 MiB on lavapipe, 4 GiB - 1 on NVIDIA)
  // and one pool block within maxMemoryAllocationSize; the pool rounds to powers of two.
  uint64_t limit = caps.max_storage_buffer_range;
  if (caps.max_memory_allocation_size != 0) limit = std::min<uint64_t>(limit, caps.max_memory_allocation_size);
  limit = std::bit_floor(std::max<uint64_t>(limit, kMiB));

  std::vector<uint64_t> sizes;
  for (uint64_t m : mib) {
    const uint64_t bytes = std::min(m * kMiB, limit);
    if (std::find(sizes.begin(), sizes.end(), bytes) == sizes.end()) sizes.push_back(bytes);
  }
  for (uint64_t bytes : sizes) {
    const int reps = static_cast<int>(std::clamp<uint64_t>(rep_bytes / bytes, 1, 64));
    benchmark::RegisterBenchmark(("copy/shader_vs_vkCmdCopyBuffer/" + size_label(bytes)).c_str(), copy_bandwidth, &rt,
                                 bytes, reps)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace recon::bench
