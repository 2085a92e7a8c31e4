// Buffer-pool latency: one acquire + release pair of the activations pool, against the raw driver
// path a pool saves (vkCreateBuffer + vkAllocateMemory + bind, then destroy + free) of the same
// size, measured in the same benchmark right after the pool loop.
#include <algorithm>
#include <chrono>

#include "bench/gpu/bench_util.h"
#include "gpu/vk_check.h"

namespace recon::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr VkBufferUsageFlags kUsage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;

// What a pool acquire + release replaces: a dedicated buffer and allocation, created and freed.
Status raw_pair(gpu::Context& ctx, VkDeviceSize size, uint32_t memory_type) {
  VkDevice dev = ctx.device();
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = size;
  info.usage = kUsage;
  VkBuffer buffer = VK_NULL_HANDLE;
  RECON_VK_RETURN_IF_ERROR(vkCreateBuffer(dev, &info, nullptr, &buffer));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev, buffer, &req);
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = memory_type;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  Status s = RECON_VK(vkAllocateMemory(dev, &alloc, nullptr, &memory));
  if (s.is_ok()) s = RECON_VK(vkBindBufferMemory(dev, buffer, memory, 0));
  vkDestroyBuffer(dev, buffer, nullptr);
  if (memory != VK_NULL_HANDLE) vkFreeMemory(dev, memory, nullptr);
  return s;
}

// The memory type the activations pool itself picks: device-local where there is one.
Result<uint32_t> device_memory_type(gpu::Context& ctx) {
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = 4096;
  info.usage = kUsage;
  VkBuffer probe = VK_NULL_HANDLE;
  RECON_VK_RETURN_IF_ERROR(vkCreateBuffer(ctx.device(), &info, nullptr, &probe));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(ctx.device(), probe, &req);
  vkDestroyBuffer(ctx.device(), probe, nullptr);
  return ctx.find_memory_type(req.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
}

void pool_acquire_release(benchmark::State& state, gpu::Runtime* rt, VkDeviceSize size) {
  gpu::BufferPool& pool = rt->pool(gpu::MemoryRole::kActivations);
  {
    // The first acquire of a class reserves its block; that miss is not what we time.
    auto warm = pool.acquire(size);
    if (!warm.is_ok()) return fail(state, warm.status());
  }
  const auto start = Clock::now();
  for (auto _ : state) {
    auto buffer = pool.acquire(size);  // released at the end of the iteration
    benchmark::DoNotOptimize(buffer);
    if (!buffer.is_ok()) {
      fail(state, buffer.status());
      break;
    }
  }
  const double pool_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (state.error_occurred() || state.iterations() == 0) return;

  auto memory_type = device_memory_type(rt->context());
  if (!memory_type.is_ok()) return fail(state, memory_type.status());
  // The baseline gets about as much time as the pool loop had (at least 3 pairs, at most 1 s).
  const double budget_s = std::clamp(pool_s, 0.002, 1.0);
  uint64_t raw_pairs = 0;
  const auto raw_start = Clock::now();
  double raw_s = 0;
  while (raw_pairs < 3 || raw_s < budget_s) {
    Status s = raw_pair(rt->context(), size, *memory_type);
    if (!s.is_ok()) return fail(state, s.with_context("raw allocation baseline"));
    ++raw_pairs;
    raw_s = std::chrono::duration<double>(Clock::now() - raw_start).count();
  }

  const double pool_ns = pool_s * 1e9 / static_cast<double>(state.iterations());
  const double raw_ns = raw_s * 1e9 / static_cast<double>(raw_pairs);
  state.counters["ns_per_pair"] = pool_ns;
  state.counters["baseline_ns_per_pair"] = raw_ns;
  state.counters["ratio_vs_baseline"] = raw_ns / pool_ns;  // > 1: the pool is that many times faster
}

}  // namespace

void register_pool_benchmarks(gpu::Runtime& rt) {
  for (VkDeviceSize size : {VkDeviceSize{256}, VkDeviceSize{64} << 10, VkDeviceSize{1} << 20, VkDeviceSize{16} << 20}) {
    benchmark::RegisterBenchmark(("pool_acquire_release/" + size_label(size)).c_str(), pool_acquire_release, &rt, size)
        ->Unit(benchmark::kNanosecond);
  }
}

}  // namespace recon::bench
