// Sub-allocates device memory for tensors. Each pool (weights, activations, staging) carves
// power-of-two size classes out of large VkDeviceMemory blocks, so acquire and release are O(1)
// and the driver sees few, large allocations. Idle blocks age out back to the driver; a
// configured cap turns exhaustion into a RESOURCE_EXHAUSTED error instead of a crash.
//
// Tensors larger than maxStorageBufferRange (128 MiB on lavapipe) may be allocated here; it is the
// op layer's job to bind them as several ranges (see docs/GPU_RUNTIME.md, "Large tensors").
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "gpu/context.h"
#include "gpu/status.h"

namespace recon::gpu {

enum class MemoryRole { kWeights, kActivations, kStaging };
const char* memory_role_name(MemoryRole role);

struct PoolOptions {
  MemoryRole role = MemoryRole::kActivations;
  // Size of the blocks that small classes are carved from; clamped to maxMemoryAllocationSize.
  VkDeviceSize block_size = VkDeviceSize{64} << 20;
  // Upper bound on bytes reserved from the driver; 0 means no cap beyond the driver's own.
  VkDeviceSize cap = 0;
  // A block with nothing in use for this long is returned to the driver by trim().
  std::chrono::milliseconds idle_age{5000};
  // Large requests (over block_size / 8) get a block of exactly their size (rounded to 64 KiB),
  // freed on release, instead of a power-of-two class. Right for weights, which are long-lived.
  bool exact_large = false;
};

struct PoolStats {
  uint64_t reserved_bytes = 0;  // held from the driver
  uint64_t in_use_bytes = 0;    // capacity of live allocations
  uint64_t high_water_bytes = 0;
  uint64_t hits = 0;    // acquisitions served from memory already reserved
  uint64_t misses = 0;  // acquisitions that had to reserve a new block
  uint64_t blocks = 0;
  uint64_t live_allocations = 0;
  uint64_t trimmed_blocks = 0;  // blocks returned to the driver by aging
};

class BufferPool;

// A live sub-allocation. Returns itself to its pool when destroyed; the pool must outlive it.
class PoolBuffer {
 public:
  PoolBuffer() = default;
  PoolBuffer(PoolBuffer&& other) noexcept { *this = std::move(other); }
  PoolBuffer& operator=(PoolBuffer&& other) noexcept;
  PoolBuffer(const PoolBuffer&) = delete;
  PoolBuffer& operator=(const PoolBuffer&) = delete;
  ~PoolBuffer() { reset(); }

  void reset();
  bool valid() const { return pool_ != nullptr; }
  VkBuffer buffer() const { return buffer_; }
  VkDeviceSize offset() const { return offset_; }
  VkDeviceSize size() const { return size_; }          // bytes requested
  VkDeviceSize capacity() const { return capacity_; }  // bytes reserved for it
  // Host pointer to the first byte, for host-visible pools (staging); nullptr otherwise.
  void* mapped() const { return mapped_; }

 private:
  friend class BufferPool;
  BufferPool* pool_ = nullptr;
  void* block_ = nullptr;
  uint32_t slot_ = 0;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceSize offset_ = 0, size_ = 0, capacity_ = 0;
  void* mapped_ = nullptr;
};

class BufferPool {
 public:
  static Result<std::unique_ptr<BufferPool>> create(Context& context, const PoolOptions& options);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  Result<PoolBuffer> acquire(VkDeviceSize size);

  // Returns blocks idle for longer than idle_age (all idle blocks if `all`) to the driver.
  // Returns the number of blocks freed.
  size_t trim(bool all = false);

  PoolStats stats() const;
  const PoolOptions& options() const { return options_; }
  MemoryRole role() const { return options_.role; }

  // Size class of a request: the power of two that holds it (at least kMinClassBytes).
  static VkDeviceSize class_bytes(VkDeviceSize size);
  static constexpr VkDeviceSize kMinClassBytes = 256;

 private:
  struct Block;
  using Clock = std::chrono::steady_clock;

  BufferPool(Context& context, const PoolOptions& options);
  Status init();
  void release(void* block, uint32_t slot);
  Result<Block*> new_block(VkDeviceSize class_bytes, VkDeviceSize block_bytes, uint32_t slot_count, int cls);
  void free_block(Block* block);
  size_t trim_locked(bool all, Clock::time_point now);

  friend class PoolBuffer;

  Context& context_;
  PoolOptions options_;
  uint32_t memory_type_ = 0;
  bool host_visible_ = false;

  mutable std::mutex mutex_;  // guards everything below
  std::vector<std::unique_ptr<Block>> blocks_;
  // Per size class: blocks with at least one free slot (front is tried first).
  std::array<std::list<Block*>, 64> partial_;
  PoolStats stats_;
  Clock::time_point last_trim_ = Clock::now();
};

}  // namespace recon::gpu
