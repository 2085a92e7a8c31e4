// OutputArena: the client's shared-memory space for fetched tensors. Chunks (sealed memfds of
// ConnectOptions::output_chunk_bytes, or larger for one big result) are registered with the
// daemon once and carved into blocks, one per Fetch; a Fetch names its block as the
// RegionDestination, so the daemon copies tensors straight into memory this process maps.
// Freed blocks are coalesced; a further chunk that becomes empty stays registered for `linger`
// (threads fetching at once reuse it: registering a chunk costs a memfd, its page faults and the
// daemon's GPU import of it) and is then unregistered and unmapped at the arena's next allocate or
// free; the first chunk always stays, so a steady stream of results registers nothing.
// Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "shared_memory.h"
#include "side_channel.h"

namespace recon::client::detail {

class OutputArena {
 public:
  // Tensors in a block start at multiples of this (RegionDestination.alignment).
  static constexpr uint64_t kAlignment = 256;

  using Registrar = std::function<RegisteredRegion(int memfd, uint64_t size, std::string_view label)>;
  using Unregistrar = std::function<void(const Id& region)>;  // best effort, must not throw

  OutputArena(uint64_t chunk_bytes, std::chrono::milliseconds linger, Registrar registrar, Unregistrar unregistrar);

  struct Block {
    Id region;                  // RegionDestination.region_id
    uint64_t offset = 0;        // RegionDestination.offset (a multiple of kAlignment)
    uint64_t size = 0;          // RegionDestination.capacity
    std::byte* base = nullptr;  // the chunk's mapping: tensor bytes are at base + FetchedTensor.offset
  };

  // A block of at least `bytes`; registers a new chunk when none has room. Throws Error.
  Block allocate(uint64_t bytes);
  void free(const Block& block) noexcept;

  // Bytes of all chunks (registered memory), for tests and status.
  uint64_t registered_bytes() const;
  size_t chunk_count() const;

 private:
  struct Chunk {
    SharedMemory memory;
    Id region;
    std::map<uint64_t, uint64_t> free;                    // offset → size, coalesced
    std::chrono::steady_clock::time_point empty_since{};  // when it last became empty
    bool empty() const { return free.size() == 1 && free.begin()->second == memory.size(); }
  };
  static bool take(Chunk& chunk, uint64_t bytes, uint64_t& offset);
  // A block of `size` from the first chunk with room, or from a new chunk registered now. Throws Error.
  Block block_locked(uint64_t size);
  // Takes the further chunks empty for longer than linger_ out of chunks_ (the caller unregisters
  // them, unlocked).
  std::vector<std::unique_ptr<Chunk>> take_stale_locked(std::chrono::steady_clock::time_point now);
  void unregister(std::vector<std::unique_ptr<Chunk>> stale) noexcept;

  const uint64_t chunk_bytes_;
  const std::chrono::milliseconds linger_;
  const Registrar registrar_;
  const Unregistrar unregistrar_;
  mutable std::mutex mutex_;  // guards chunks_ (registration of a new chunk happens under it)
  std::vector<std::unique_ptr<Chunk>> chunks_;
};

}  // namespace recon::client::detail
