// ShmRegistry: the shared-memory regions (sealed memfds) every client has registered, mapped
// into the daemon, looked up by (client, region id), bounds-checked, leased while in use.
//
// What it guarantees:
//  * only sealed memfds are accepted (F_SEAL_SHRINK|F_SEAL_GROW: the client cannot truncate the
//    file under our mapping, so reading it can never SIGBUS), opened O_RDWR, not write-sealed,
//    page-multiple size; they are mapped READ-WRITE MAP_SHARED because NVIDIA's driver cannot
//    import read-only host mappings (notes/serving-anchors.md §2.7);
//  * region ids are 128-bit random and bound to their client: another client's id reads exactly
//    like an id that never existed (NOT_FOUND);
//  * per-client limits (regions, bytes) and a global byte cap (RESOURCE_EXHAUSTED);
//  * a RegionLease keeps a region mapped: unregister_region and drop_client never unmap memory
//    a lease still points into; they retire the region (new leases fail) and the last lease
//    frees it. Freed bytes count against the limits until they are really unmapped.
// What it does not do: protect the CONTENT. The client can write its pages at any time; the GPU
// layer treats every byte it reads from a region as untrusted. No GPU import happens here: the
// GPU layer imports base()/size() (page-aligned) and hangs the import on the region as a
// RegionAttachment, which is destroyed before the memory is unmapped.
//
// Thread safety: every public member may be called from any thread. One mutex (mutex_) guards
// the region table, usage counters, the freeing set and each Region's lease count, retiring
// flag and attachment; a Region's id, client, label and mapping never change after insertion
// and are read by lease holders without the lock. munmap and attachment destruction run
// outside the lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "daemon/ipc/id128.h"
#include "daemon/ipc/mapping.h"
#include "daemon/ipc/unique_fd.h"
#include "gpu/status.h"

namespace recon::daemon {

// Chosen by the server, one per session (side-channel connection); never reused.
using ClientId = uint64_t;
using RegionId = Id128;

enum class PixelFormat { kRgb8 };
inline constexpr uint32_t bytes_per_pixel(PixelFormat format) {
  switch (format) {
    case PixelFormat::kRgb8:
      return 3;
  }
  return 0;
}

// Larger sides are refused before any arithmetic (a 16384² RGB8 image is 768 MiB).
inline constexpr uint32_t kMaxImageSide = 16384;

// Where an image lies inside a region (from wire::ImageRef, see wire_convert.h).
struct ImageGeometry {
  uint64_t offset = 0;
  uint32_t height = 0;
  uint32_t width = 0;
  uint32_t stride = 0;  // bytes from one row to the next
  PixelFormat format = PixelFormat::kRgb8;
};

// Bytes the image spans from its offset: (height-1)*stride + width*bpp, with every check that
// makes that safe (non-zero sides ≤ kMaxImageSide, width*bpp ≤ stride, offset+span ≤ region
// size without overflow). INVALID_ARGUMENT naming the failed rule otherwise.
Result<uint64_t> image_extent(const ImageGeometry& image, uint64_t region_size);

struct RegistryLimits {
  uint32_t max_regions_per_client = 64;
  uint64_t max_bytes_per_client = uint64_t{8} << 30;
  uint64_t max_region_bytes = uint64_t{4} << 30;
  // Over all clients: imported regions pin host memory that no cgroup limit of ours counts.
  uint64_t max_total_bytes = uint64_t{32} << 30;
};

// Something that must die before its region's memory is unmapped (the GPU import of the pages).
class RegionAttachment {
 public:
  virtual ~RegionAttachment() = default;
};

struct RegionInfo {
  RegionId id;
  ClientId client = 0;
  uint64_t size = 0;
  uint8_t* base = nullptr;  // page-aligned (mmap)
  size_t page_size = 0;
  std::string label;
};

struct ClientUsage {
  uint32_t regions = 0;  // including retired ones still leased
  uint64_t bytes = 0;
};

struct RegistryStats {
  uint32_t regions = 0;           // live, usable
  uint32_t retiring_regions = 0;  // unregistered, waiting for their last lease
  uint64_t mapped_bytes = 0;      // everything still mapped
  uint32_t clients = 0;           // clients with at least one mapped region
  uint64_t leases = 0;            // outstanding RegionLeases
};

class ShmRegistry;
struct ShmRegion;  // one registered region; internal to shm_registry.cpp

// Keeps one region mapped while it lives; move-only. Obtained from ShmRegistry::lease*; must not
// outlive the registry (the registry aborts if destroyed while leases exist).
class RegionLease {
 public:
  RegionLease() = default;
  RegionLease(RegionLease&& other) noexcept;
  RegionLease& operator=(RegionLease&& other) noexcept;
  RegionLease(const RegionLease&) = delete;
  RegionLease& operator=(const RegionLease&) = delete;
  ~RegionLease() { reset(); }

  explicit operator bool() const { return region_ != nullptr; }
  // Accessors below need a non-empty lease.
  const RegionId& id() const;
  // The whole region (for the GPU layer: page-aligned base, page-multiple size).
  uint8_t* base() const;
  uint64_t region_size() const;
  // The range that was asked for (the whole region for lease(), the image for lease_image()).
  std::span<uint8_t> bytes() const { return bytes_; }
  // As attached when the lease was taken, or nullptr.
  RegionAttachment* attachment() const { return attachment_; }

  void reset();

 private:
  friend class ShmRegistry;
  RegionLease(ShmRegistry* registry, ShmRegion* region, std::span<uint8_t> bytes, RegionAttachment* attachment)
      : registry_(registry), region_(region), bytes_(bytes), attachment_(attachment) {}

  ShmRegistry* registry_ = nullptr;
  ShmRegion* region_ = nullptr;
  std::span<uint8_t> bytes_;
  RegionAttachment* attachment_ = nullptr;
};

class ShmRegistry {
 public:
  explicit ShmRegistry(RegistryLimits limits = {});
  // Aborts if a RegionLease is still alive (a bug: leases belong to requests the server has
  // finished before destroying the registry). Frees every region.
  ~ShmRegistry();
  ShmRegistry(const ShmRegistry&) = delete;
  ShmRegistry& operator=(const ShmRegistry&) = delete;

  // Validates `fd` (see file comment), maps it and returns the new region. Takes ownership of
  // the fd and closes it on return either way: the mapping keeps the memfd alive.
  // `expected_size` 0 accepts the memfd's size, otherwise it must match.
  // INVALID_ARGUMENT (not a memfd, unsealed, write-sealed, read-only fd, bad size),
  // RESOURCE_EXHAUSTED (limits, mmap ENOMEM).
  Result<RegionInfo> register_region(ClientId client, UniqueFd fd, uint64_t expected_size, std::string label);

  // Removes the region from lookup at once. Returns true if leases still used it (then the
  // memory is unmapped when the last one ends) and false if it was unmapped now.
  // NOT_FOUND if `client` has no such live region.
  Result<bool> unregister_region(ClientId client, const RegionId& id);

  // Unregisters every region of `client` (its session ended). Returns how many.
  size_t drop_client(ClientId client);

  // The whole region.
  Result<RegionLease> lease(ClientId client, const RegionId& id);
  // [offset, offset+length) of the region; INVALID_ARGUMENT if out of bounds (overflow-safe).
  Result<RegionLease> lease_range(ClientId client, const RegionId& id, uint64_t offset, uint64_t length);
  // The bytes of one image (image_extent's checks); bytes() starts at the first pixel.
  Result<RegionLease> lease_image(ClientId client, const RegionId& id, const ImageGeometry& image);

  // Hangs `attachment` (e.g. the GPU import) on a live region; call it before the region id is
  // given to the client. INVALID_ARGUMENT if the region has one already.
  Status attach(ClientId client, const RegionId& id, std::unique_ptr<RegionAttachment> attachment);

  // Waits until `id` is unmapped (or never existed). False on timeout.
  bool wait_until_freed(const RegionId& id, std::chrono::milliseconds timeout);

  RegistryStats stats() const;
  ClientUsage usage(ClientId client) const;
  const RegistryLimits& limits() const { return limits_; }

 private:
  friend class RegionLease;
  using RegionPtr = std::unique_ptr<ShmRegion>;

  // A live region of `client`, or nullptr (also for another client's id).
  ShmRegion* find_live_locked(ClientId client, const RegionId& id);
  // Removes `region` from regions_ and marks its id as freeing; the caller frees it unlocked.
  RegionPtr take_locked(ShmRegion* region);
  // Unmaps (attachment first), then settles the accounting and wakes wait_until_freed.
  void free_unlocked(RegionPtr region);
  void release_lease(ShmRegion* region);
  Result<RegionLease> lease_locked(ShmRegion* region, uint64_t offset, uint64_t length);

  const RegistryLimits limits_;
  const size_t page_size_;

  mutable std::mutex mutex_;
  std::condition_variable freed_;
  std::unordered_map<RegionId, RegionPtr, Id128Hash> regions_;  // live and retiring
  std::unordered_set<RegionId, Id128Hash> freeing_;             // taken out, being unmapped
  std::unordered_map<ClientId, ClientUsage> usage_;             // entries with regions > 0
  uint64_t total_bytes_ = 0;                                    // reserved or mapped
  uint64_t leases_ = 0;
};

}  // namespace recon::daemon
