#include "gpu/buffer_pool.h"

#include <algorithm>
#include <bit>

#include "gpu/log.h"
#include "gpu/vk_check.h"

namespace recon::gpu {

const char* memory_role_name(MemoryRole role) {
  switch (role) {
    case MemoryRole::kWeights:
      return "weights";
    case MemoryRole::kActivations:
      return "activations";
    case MemoryRole::kStaging:
      return "staging";
  }
  return "?";
}

struct BufferPool::Block {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  void* mapped = nullptr;
  VkDeviceSize bytes = 0;       // whole block
  VkDeviceSize slot_bytes = 0;  // capacity of each slot
  int cls = -1;                 // size class, -1 for exact-size blocks
  uint32_t slot_count = 0;
  uint32_t next_unused = 0;  // slots below this were handed out at least once
  std::vector<uint32_t> free_slots;
  uint32_t in_use = 0;
  Clock::time_point idle_since = Clock::now();
  bool in_partial = false;
  std::list<Block*>::iterator partial_it;

  bool has_free() const { return !free_slots.empty() || next_unused < slot_count; }
};

PoolBuffer& PoolBuffer::operator=(PoolBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::exchange(other.pool_, nullptr);
    block_ = std::exchange(other.block_, nullptr);
    slot_ = other.slot_;
    buffer_ = std::exchange(other.buffer_, VK_NULL_HANDLE);
    offset_ = other.offset_;
    size_ = other.size_;
    capacity_ = other.capacity_;
    mapped_ = std::exchange(other.mapped_, nullptr);
  }
  return *this;
}

void PoolBuffer::reset() {
  if (pool_ != nullptr) pool_->release(block_, slot_);
  pool_ = nullptr;
  block_ = nullptr;
  buffer_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
}

VkDeviceSize BufferPool::class_bytes(VkDeviceSize size) {
  return std::bit_ceil(std::max<VkDeviceSize>(size, kMinClassBytes));
}

BufferPool::BufferPool(Context& context, const PoolOptions& options) : context_(context), options_(options) {}

Result<std::unique_ptr<BufferPool>> BufferPool::create(Context& context, const PoolOptions& options) {
  std::unique_ptr<BufferPool> pool(new BufferPool(context, options));
  RECON_RETURN_IF_ERROR(pool->init());
  return pool;
}

Status BufferPool::init() {
  const auto& caps = context_.caps();
  if (caps.max_memory_allocation_size > 0) {
    options_.block_size = std::min(options_.block_size, caps.max_memory_allocation_size);
  }
  options_.block_size = std::bit_floor(std::max<VkDeviceSize>(options_.block_size, 1 << 20));

  // Probe a buffer's memory-type bits to choose the memory type once.
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = 4096;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  VkBuffer probe = VK_NULL_HANDLE;
  RECON_VK_RETURN_IF_ERROR(vkCreateBuffer(context_.device(), &info, nullptr, &probe));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(context_.device(), probe, &req);
  vkDestroyBuffer(context_.device(), probe, nullptr);

  VkMemoryPropertyFlags required = 0, preferred = 0;
  if (options_.role == MemoryRole::kStaging) {
    required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    preferred = required | VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  } else {
    preferred = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  }
  RECON_ASSIGN_OR_RETURN(memory_type_, context_.find_memory_type(req.memoryTypeBits, required, preferred));
  host_visible_ = options_.role == MemoryRole::kStaging;
  return Status::ok();
}

BufferPool::~BufferPool() {
  std::lock_guard lock(mutex_);
  if (stats_.live_allocations != 0) {
    log_error(std::string("buffer pool (") + memory_role_name(options_.role) + ") destroyed with " +
              std::to_string(stats_.live_allocations) + " live allocation(s)");
  }
  for (auto& b : blocks_) free_block(b.get());
  blocks_.clear();
}

Result<BufferPool::Block*> BufferPool::new_block(VkDeviceSize slot_bytes, VkDeviceSize block_bytes, uint32_t slot_count,
                                                 int cls) {
  if (options_.cap != 0 && stats_.reserved_bytes + block_bytes > options_.cap) {
    trim_locked(/*all=*/true, Clock::now());
    if (stats_.reserved_bytes + block_bytes > options_.cap) {
      return resource_exhausted(std::string(memory_role_name(options_.role)) + " pool cap of " +
                                std::to_string(options_.cap >> 20) +
                                " MiB reached: " + std::to_string(stats_.reserved_bytes >> 20) + " MiB reserved, " +
                                std::to_string(block_bytes) + " more bytes needed");
    }
  }
  const auto& caps = context_.caps();
  if (caps.max_memory_allocation_size != 0 && block_bytes > caps.max_memory_allocation_size) {
    return resource_exhausted("allocation of " + std::to_string(block_bytes) + " bytes exceeds the device's " +
                              "maxMemoryAllocationSize of " + std::to_string(caps.max_memory_allocation_size));
  }

  auto block = std::make_unique<Block>();
  VkDevice dev = context_.device();
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = block_bytes;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  RECON_VK_RETURN_IF_ERROR(vkCreateBuffer(dev, &info, nullptr, &block->buffer));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev, block->buffer, &req);
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = memory_type_;
  Status s = RECON_VK(vkAllocateMemory(dev, &alloc, nullptr, &block->memory));
  if (s.is_ok()) s = RECON_VK(vkBindBufferMemory(dev, block->buffer, block->memory, 0));
  if (s.is_ok() && host_visible_) s = RECON_VK(vkMapMemory(dev, block->memory, 0, VK_WHOLE_SIZE, 0, &block->mapped));
  if (!s.is_ok()) {
    free_block(block.get());
    return s.with_context(std::string("reserving a ") + std::to_string(block_bytes >> 10) + " KiB " +
                          memory_role_name(options_.role) + " block");
  }
  block->bytes = block_bytes;
  block->slot_bytes = slot_bytes;
  block->slot_count = slot_count;
  block->cls = cls;
  stats_.reserved_bytes += block_bytes;
  stats_.blocks += 1;
  stats_.misses += 1;
  blocks_.push_back(std::move(block));
  return blocks_.back().get();
}

void BufferPool::free_block(Block* b) {
  VkDevice dev = context_.device();
  if (b->mapped) vkUnmapMemory(dev, b->memory);
  if (b->buffer) vkDestroyBuffer(dev, b->buffer, nullptr);
  if (b->memory) vkFreeMemory(dev, b->memory, nullptr);
  b->mapped = nullptr;
  b->buffer = VK_NULL_HANDLE;
  b->memory = VK_NULL_HANDLE;
}

Result<PoolBuffer> BufferPool::acquire(VkDeviceSize size) {
  if (size == 0) return invalid_argument("buffer pool: zero-byte allocation");
  std::lock_guard lock(mutex_);
  auto now = Clock::now();
  if (now - last_trim_ > options_.idle_age) trim_locked(false, now);

  const VkDeviceSize cls_bytes = class_bytes(size);
  const bool large = cls_bytes > options_.block_size / 8;
  Block* block = nullptr;
  if (large && options_.exact_large) {
    constexpr VkDeviceSize kGranule = 64 << 10;
    VkDeviceSize bytes = (size + kGranule - 1) / kGranule * kGranule;
    RECON_ASSIGN_OR_RETURN(block, new_block(bytes, bytes, 1, -1));
  } else {
    const int cls = std::countr_zero(cls_bytes);
    auto& partial = partial_[cls];
    if (!partial.empty()) {
      block = partial.front();
      stats_.hits += 1;
    } else {
      VkDeviceSize block_bytes = large ? cls_bytes : options_.block_size;
      uint32_t slots = static_cast<uint32_t>(block_bytes / cls_bytes);
      RECON_ASSIGN_OR_RETURN(block, new_block(cls_bytes, block_bytes, slots, cls));
      partial.push_front(block);
      block->in_partial = true;
      block->partial_it = partial.begin();
    }
  }

  uint32_t slot;
  if (!block->free_slots.empty()) {
    slot = block->free_slots.back();
    block->free_slots.pop_back();
  } else {
    slot = block->next_unused++;
  }
  block->in_use += 1;
  if (block->in_partial && !block->has_free()) {
    partial_[block->cls].erase(block->partial_it);
    block->in_partial = false;
  }

  stats_.in_use_bytes += block->slot_bytes;
  stats_.high_water_bytes = std::max(stats_.high_water_bytes, stats_.in_use_bytes);
  stats_.live_allocations += 1;

  PoolBuffer out;
  out.pool_ = this;
  out.block_ = block;
  out.slot_ = slot;
  out.buffer_ = block->buffer;
  out.offset_ = VkDeviceSize{slot} * block->slot_bytes;
  out.size_ = size;
  out.capacity_ = block->slot_bytes;
  out.mapped_ = block->mapped ? static_cast<char*>(block->mapped) + out.offset_ : nullptr;
  return out;
}

void BufferPool::release(void* opaque, uint32_t slot) {
  std::lock_guard lock(mutex_);
  auto* block = static_cast<Block*>(opaque);
  block->free_slots.push_back(slot);
  block->in_use -= 1;
  stats_.in_use_bytes -= block->slot_bytes;
  stats_.live_allocations -= 1;
  if (block->cls < 0) {  // exact-size block: back to the driver at once
    stats_.reserved_bytes -= block->bytes;
    stats_.blocks -= 1;
    free_block(block);
    std::erase_if(blocks_, [&](const std::unique_ptr<Block>& b) { return b.get() == block; });
    return;
  }
  if (!block->in_partial) {
    auto& partial = partial_[block->cls];
    partial.push_front(block);
    block->partial_it = partial.begin();
    block->in_partial = true;
  }
  if (block->in_use == 0) block->idle_since = Clock::now();
}

size_t BufferPool::trim(bool all) {
  std::lock_guard lock(mutex_);
  return trim_locked(all, Clock::now());
}

size_t BufferPool::trim_locked(bool all, Clock::time_point now) {
  last_trim_ = now;
  size_t freed = 0;
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    Block* b = it->get();
    if (b->in_use == 0 && (all || now - b->idle_since >= options_.idle_age)) {
      if (b->in_partial) partial_[b->cls].erase(b->partial_it);
      stats_.reserved_bytes -= b->bytes;
      stats_.blocks -= 1;
      stats_.trimmed_blocks += 1;
      free_block(b);
      it = blocks_.erase(it);
      ++freed;
    } else {
      ++it;
    }
  }
  return freed;
}

PoolStats BufferPool::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace recon::gpu
