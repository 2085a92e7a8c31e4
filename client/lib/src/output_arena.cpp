// OutputArena: first-fit blocks over registered shared-memory chunks.
#include "output_arena.h"

#include <algorithm>
#include <iterator>

namespace recon::client::detail {
OutputArena::OutputArena(uint64_t chunk_bytes, std::chrono::milliseconds linger, Registrar registrar,
                         Unregistrar unregistrar)
    : chunk_bytes_(round_up_to_pages(chunk_bytes)),
      linger_(linger),
      registrar_(std::move(registrar)),
      unregistrar_(std::move(unregistrar)) {}

bool OutputArena::take(Chunk& chunk, uint64_t bytes, uint64_t& offset) {
  for (auto it = chunk.free.begin(); it != chunk.free.end(); ++it) {
    if (it->second < bytes) continue;
    offset = it->first;
    const uint64_t rest = it->second - bytes;
    chunk.free.erase(it);
    if (rest > 0) chunk.free.emplace(offset + bytes, rest);
    return true;
  }
  return false;
}

std::vector<std::unique_ptr<OutputArena::Chunk>> OutputArena::take_stale_locked(
    std::chrono::steady_clock::time_point now) {
  std::vector<std::unique_ptr<Chunk>> stale;
  for (size_t i = chunks_.size(); i-- > 1;) {
    if (chunks_[i]->empty() && now - chunks_[i]->empty_since >= linger_) {
      stale.push_back(std::move(chunks_[i]));
      chunks_.erase(chunks_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  return stale;
}

void OutputArena::unregister(std::vector<std::unique_ptr<Chunk>> stale) noexcept {
  for (const auto& chunk : stale) unregistrar_(chunk->region);  // then each chunk unmaps
}

OutputArena::Block OutputArena::block_locked(uint64_t size) {
  for (auto& chunk : chunks_) {
    uint64_t offset = 0;
    if (take(*chunk, size, offset)) return Block{chunk->region, offset, size, chunk->memory.data()};
  }
  auto chunk = std::make_unique<Chunk>();
  chunk->memory = SharedMemory::create("recon-output", std::max(chunk_bytes_, size));
  const RegisteredRegion registered = registrar_(chunk->memory.fd(), chunk->memory.size(), "output");
  chunk->region = registered.id;
  chunk->free.emplace(0, chunk->memory.size());
  uint64_t offset = 0;
  take(*chunk, size, offset);
  chunks_.push_back(std::move(chunk));
  return Block{chunks_.back()->region, offset, size, chunks_.back()->memory.data()};
}

OutputArena::Block OutputArena::allocate(uint64_t bytes) {
  const uint64_t size = align_up(bytes == 0 ? 1 : bytes, kAlignment);
  std::vector<std::unique_ptr<Chunk>> stale;
  Block block;
  {
    std::lock_guard lock(mutex_);
    stale = take_stale_locked(std::chrono::steady_clock::now());
    block = block_locked(size);
  }
  unregister(std::move(stale));
  return block;
}

void OutputArena::free(const Block& block) noexcept {
  std::vector<std::unique_ptr<Chunk>> stale;
  {
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    for (auto& owned : chunks_) {
      Chunk& chunk = *owned;
      if (!(chunk.region == block.region)) continue;
      auto next = chunk.free.emplace(block.offset, block.size).first;
      // Merge with the following and the preceding free range.
      if (auto after = std::next(next); after != chunk.free.end() && next->first + next->second == after->first) {
        next->second += after->second;
        chunk.free.erase(after);
      }
      if (next != chunk.free.begin()) {
        auto before = std::prev(next);
        if (before->first + before->second == next->first) {
          before->second += next->second;
          chunk.free.erase(next);
        }
      }
      if (chunk.empty()) chunk.empty_since = now;
      break;
    }
    stale = take_stale_locked(now);
  }
  unregister(std::move(stale));
}

uint64_t OutputArena::registered_bytes() const {
  std::lock_guard lock(mutex_);
  uint64_t total = 0;
  for (const auto& chunk : chunks_) total += chunk->memory.size();
  return total;
}

size_t OutputArena::chunk_count() const {
  std::lock_guard lock(mutex_);
  return chunks_.size();
}

}  // namespace recon::client::detail
