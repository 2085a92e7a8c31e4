// ShmRegistry: memfd validation, mapping, per-client accounting and leases.
#include "daemon/ipc/shm_registry.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

namespace recon::daemon {

struct ShmRegion {
  // Immutable after insertion into the registry.
  RegionId id;
  ClientId client = 0;
  std::string label;
  Mapping mapping;
  // Guarded by ShmRegistry::mutex_.
  std::unique_ptr<RegionAttachment> attachment;  // destroyed before `mapping` (see free_unlocked)
  uint32_t leases = 0;
  bool retiring = false;
};

namespace {

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

// The checks on the fd itself, in an order that defeats a racing client: seals are read BEFORE
// the size, and seals can only ever be added, so once SHRINK|GROW are seen the size is final.
Result<uint64_t> validate_memfd(int fd, uint64_t expected_size, uint64_t max_region_bytes, size_t page_size) {
  if (fd < 0) return invalid_argument("no file descriptor");
  struct stat st {};
  if (::fstat(fd, &st) != 0) return invalid_argument(errno_text("fstat of region fd"));
  if (!S_ISREG(st.st_mode)) {
    return invalid_argument("region fd is not a memfd (not a regular file: a pipe, socket or device)");
  }
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0) {
    return invalid_argument("region fd is not a memfd (F_GET_SEALS failed: " + std::string(std::strerror(errno)) +
                            "); create it with memfd_create(MFD_ALLOW_SEALING)");
  }
  if ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
    return invalid_argument(
        "region memfd is not sealed against resizing: add F_SEAL_SHRINK|F_SEAL_GROW "
        "(fcntl F_ADD_SEALS) before registering it");
  }
  if ((seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) != 0) {
    return invalid_argument("region memfd is write-sealed; the daemon must map it read-write for GPU import");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return invalid_argument(errno_text("fcntl F_GETFL of region fd"));
  if ((flags & O_ACCMODE) != O_RDWR) return invalid_argument("region fd is not open O_RDWR");
  if (::fstat(fd, &st) != 0) return invalid_argument(errno_text("fstat of region fd"));
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size == 0) return invalid_argument("region memfd is empty (ftruncate it before sealing)");
  if (size % page_size != 0) {
    return invalid_argument("region size " + std::to_string(size) + " is not a multiple of the page size " +
                            std::to_string(page_size));
  }
  if (expected_size != 0 && expected_size != size) {
    return invalid_argument("region memfd has " + std::to_string(size) + " bytes, the request says " +
                            std::to_string(expected_size));
  }
  if (size > max_region_bytes) {
    return resource_exhausted("region of " + mib(size) + " exceeds the per-region limit of " + mib(max_region_bytes));
  }
  return size;
}

// offset + length <= size, without overflow.
bool range_fits(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

}  // namespace

Result<uint64_t> image_extent(const ImageGeometry& image, uint64_t region_size) {
  const uint32_t bpp = bytes_per_pixel(image.format);
  if (bpp == 0) return invalid_argument("unknown pixel format");
  if (image.height == 0 || image.width == 0) {
    return invalid_argument("image has a zero side (" + std::to_string(image.width) + "x" +
                            std::to_string(image.height) + ")");
  }
  if (image.height > kMaxImageSide || image.width > kMaxImageSide) {
    return invalid_argument("image " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                            " exceeds the largest side " + std::to_string(kMaxImageSide));
  }
  const uint64_t row_bytes = uint64_t{image.width} * bpp;  // ≤ 16384*3: no overflow
  if (row_bytes > image.stride) {
    return invalid_argument("image stride " + std::to_string(image.stride) + " is smaller than a row (" +
                            std::to_string(row_bytes) + " bytes)");
  }
  uint64_t extent = 0;
  if (__builtin_mul_overflow(uint64_t{image.height} - 1, uint64_t{image.stride}, &extent) ||
      __builtin_add_overflow(extent, row_bytes, &extent)) {
    return invalid_argument("image extent overflows");
  }
  if (!range_fits(image.offset, extent, region_size)) {
    return invalid_argument("image at offset " + std::to_string(image.offset) + " spanning " + std::to_string(extent) +
                            " bytes does not fit in the region of " + std::to_string(region_size) + " bytes");
  }
  return extent;
}

// ---- RegionLease ------------------------------------------------------------------------------

RegionLease::RegionLease(RegionLease&& other) noexcept
    : registry_(std::exchange(other.registry_, nullptr)),
      region_(std::exchange(other.region_, nullptr)),
      bytes_(std::exchange(other.bytes_, {})),
      attachment_(std::exchange(other.attachment_, nullptr)) {}

RegionLease& RegionLease::operator=(RegionLease&& other) noexcept {
  if (this != &other) {
    reset();
    registry_ = std::exchange(other.registry_, nullptr);
    region_ = std::exchange(other.region_, nullptr);
    bytes_ = std::exchange(other.bytes_, {});
    attachment_ = std::exchange(other.attachment_, nullptr);
  }
  return *this;
}

const RegionId& RegionLease::id() const {
  return region_->id;
}
uint8_t* RegionLease::base() const {
  return region_->mapping.data();
}
uint64_t RegionLease::region_size() const {
  return region_->mapping.size();
}

void RegionLease::reset() {
  if (region_ != nullptr) registry_->release_lease(region_);
  registry_ = nullptr;
  region_ = nullptr;
  bytes_ = {};
  attachment_ = nullptr;
}

// ---- ShmRegistry ------------------------------------------------------------------------------

ShmRegistry::ShmRegistry(RegistryLimits limits)
    : limits_(limits), page_size_(static_cast<size_t>(::sysconf(_SC_PAGESIZE))) {}

ShmRegistry::~ShmRegistry() {
  std::vector<RegionPtr> doomed;
  {
    std::lock_guard lock(mutex_);
    if (leases_ != 0) {
      std::fprintf(stderr, "recon: ShmRegistry destroyed with %llu region leases alive\n",
                   static_cast<unsigned long long>(leases_));
      std::abort();
    }
    for (auto& [id, region] : regions_) doomed.push_back(std::move(region));
    regions_.clear();
  }
  for (RegionPtr& region : doomed) {
    region->attachment.reset();
    region.reset();
  }
}

Result<RegionInfo> ShmRegistry::register_region(ClientId client, UniqueFd fd, uint64_t expected_size,
                                                std::string label) {
  RECON_ASSIGN_OR_RETURN(const uint64_t size,
                         validate_memfd(fd.get(), expected_size, limits_.max_region_bytes, page_size_));
  // Reserve the bytes before mapping so that concurrent registrations cannot overshoot.
  {
    std::lock_guard lock(mutex_);
    ClientUsage& usage = usage_[client];
    Status refused;
    if (usage.regions >= limits_.max_regions_per_client) {
      refused = resource_exhausted("client already holds " + std::to_string(usage.regions) + " regions (limit " +
                                   std::to_string(limits_.max_regions_per_client) + ")");
    } else if (size > limits_.max_bytes_per_client - std::min(usage.bytes, limits_.max_bytes_per_client)) {
      refused = resource_exhausted("region of " + mib(size) + " would exceed the client's limit of " +
                                   mib(limits_.max_bytes_per_client) + " (" + mib(usage.bytes) + " registered)");
    } else if (size > limits_.max_total_bytes - std::min(total_bytes_, limits_.max_total_bytes)) {
      refused = resource_exhausted("region of " + mib(size) + " would exceed the daemon's limit of " +
                                   mib(limits_.max_total_bytes) + " for all clients");
    }
    if (!refused.is_ok()) {
      if (usage.regions == 0) usage_.erase(client);
      return refused;
    }
    ++usage.regions;
    usage.bytes += size;
    total_bytes_ += size;
  }
  auto unreserve = [&] {
    std::lock_guard lock(mutex_);
    ClientUsage& usage = usage_[client];
    --usage.regions;
    usage.bytes -= size;
    total_bytes_ -= size;
    if (usage.regions == 0) usage_.erase(client);
  };

  auto mapping = Mapping::map_shared(fd.get(), size, PROT_READ | PROT_WRITE);
  if (!mapping.is_ok()) {
    unreserve();
    return mapping.status().with_context("mapping region");
  }
  // Client images have no place in the daemon's core dumps.
  ::madvise(mapping->data(), size, MADV_DONTDUMP);
  fd.reset();  // the mapping keeps the memfd alive

  auto region = std::make_unique<ShmRegion>();
  region->client = client;
  region->label = std::move(label);
  region->mapping = std::move(mapping).value();

  RegionInfo info;
  {
    std::lock_guard lock(mutex_);
    do {
      auto id = Id128::random();
      if (!id.is_ok()) {
        // Rare enough to not bother unlocking first.
        ClientUsage& usage = usage_[client];
        --usage.regions;
        usage.bytes -= size;
        total_bytes_ -= size;
        if (usage.regions == 0) usage_.erase(client);
        return id.status();
      }
      region->id = *id;
    } while (regions_.contains(region->id) || freeing_.contains(region->id));
    info.id = region->id;
    info.client = client;
    info.size = size;
    info.base = region->mapping.data();
    info.page_size = page_size_;
    info.label = region->label;
    regions_.emplace(region->id, std::move(region));
  }
  return info;
}

ShmRegion* ShmRegistry::find_live_locked(ClientId client, const RegionId& id) {
  auto it = regions_.find(id);
  if (it == regions_.end()) return nullptr;
  ShmRegion* region = it->second.get();
  if (region->client != client || region->retiring) return nullptr;
  return region;
}

ShmRegistry::RegionPtr ShmRegistry::take_locked(ShmRegion* region) {
  auto it = regions_.find(region->id);
  RegionPtr taken = std::move(it->second);
  regions_.erase(it);
  freeing_.insert(taken->id);
  return taken;
}

void ShmRegistry::free_unlocked(RegionPtr region) {
  const RegionId id = region->id;
  const ClientId client = region->client;
  const uint64_t bytes = region->mapping.size();
  region->attachment.reset();  // e.g. the GPU import: it must go while the pages are mapped
  region.reset();              // munmap
  {
    std::lock_guard lock(mutex_);
    freeing_.erase(id);
    total_bytes_ -= bytes;
    auto it = usage_.find(client);
    if (it != usage_.end()) {
      --it->second.regions;
      it->second.bytes -= bytes;
      if (it->second.regions == 0) usage_.erase(it);
    }
  }
  freed_.notify_all();
}

Result<bool> ShmRegistry::unregister_region(ClientId client, const RegionId& id) {
  RegionPtr doomed;
  {
    std::lock_guard lock(mutex_);
    ShmRegion* region = find_live_locked(client, id);
    if (region == nullptr) return not_found("region " + id.to_string() + " not found");
    if (region->leases > 0) {
      region->retiring = true;  // the last lease frees it
      return true;
    }
    doomed = take_locked(region);
  }
  free_unlocked(std::move(doomed));
  return false;
}

size_t ShmRegistry::drop_client(ClientId client) {
  std::vector<RegionPtr> doomed;
  size_t dropped = 0;
  {
    std::lock_guard lock(mutex_);
    std::vector<ShmRegion*> mine;
    for (auto& [id, region] : regions_) {
      if (region->client == client && !region->retiring) mine.push_back(region.get());
    }
    for (ShmRegion* region : mine) {
      ++dropped;
      if (region->leases > 0) {
        region->retiring = true;
      } else {
        doomed.push_back(take_locked(region));
      }
    }
  }
  for (RegionPtr& region : doomed) free_unlocked(std::move(region));
  return dropped;
}

Result<RegionLease> ShmRegistry::lease_locked(ShmRegion* region, uint64_t offset, uint64_t length) {
  ++region->leases;
  ++leases_;
  std::span<uint8_t> bytes(region->mapping.data() + offset, length);
  return RegionLease(this, region, bytes, region->attachment.get());
}

Result<RegionLease> ShmRegistry::lease(ClientId client, const RegionId& id) {
  std::lock_guard lock(mutex_);
  ShmRegion* region = find_live_locked(client, id);
  if (region == nullptr) return not_found("region " + id.to_string() + " not found");
  return lease_locked(region, 0, region->mapping.size());
}

Result<RegionLease> ShmRegistry::lease_range(ClientId client, const RegionId& id, uint64_t offset, uint64_t length) {
  std::lock_guard lock(mutex_);
  ShmRegion* region = find_live_locked(client, id);
  if (region == nullptr) return not_found("region " + id.to_string() + " not found");
  if (!range_fits(offset, length, region->mapping.size())) {
    return invalid_argument("range at offset " + std::to_string(offset) + " of " + std::to_string(length) +
                            " bytes does not fit in the region of " + std::to_string(region->mapping.size()) +
                            " bytes");
  }
  return lease_locked(region, offset, length);
}

Result<RegionLease> ShmRegistry::lease_image(ClientId client, const RegionId& id, const ImageGeometry& image) {
  std::lock_guard lock(mutex_);
  ShmRegion* region = find_live_locked(client, id);
  if (region == nullptr) return not_found("region " + id.to_string() + " not found");
  RECON_ASSIGN_OR_RETURN(const uint64_t extent, image_extent(image, region->mapping.size()));
  return lease_locked(region, image.offset, extent);
}

Status ShmRegistry::attach(ClientId client, const RegionId& id, std::unique_ptr<RegionAttachment> attachment) {
  std::lock_guard lock(mutex_);
  ShmRegion* region = find_live_locked(client, id);
  if (region == nullptr) return not_found("region " + id.to_string() + " not found");
  if (region->attachment) return invalid_argument("region " + id.to_string() + " is attached already");
  region->attachment = std::move(attachment);
  return Status::ok();
}

void ShmRegistry::release_lease(ShmRegion* region) {
  RegionPtr doomed;
  {
    std::lock_guard lock(mutex_);
    --region->leases;
    --leases_;
    if (region->leases == 0 && region->retiring) doomed = take_locked(region);
  }
  if (doomed) free_unlocked(std::move(doomed));
}

bool ShmRegistry::wait_until_freed(const RegionId& id, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return freed_.wait_for(lock, timeout, [&] { return !regions_.contains(id) && !freeing_.contains(id); });
}

RegistryStats ShmRegistry::stats() const {
  std::lock_guard lock(mutex_);
  RegistryStats stats;
  for (const auto& [id, region] : regions_) {
    if (region->retiring) {
      ++stats.retiring_regions;
    } else {
      ++stats.regions;
    }
  }
  stats.mapped_bytes = total_bytes_;
  stats.clients = static_cast<uint32_t>(usage_.size());
  stats.leases = leases_;
  return stats;
}

ClientUsage ShmRegistry::usage(ClientId client) const {
  std::lock_guard lock(mutex_);
  auto it = usage_.find(client);
  return it == usage_.end() ? ClientUsage{} : it->second;
}

}  // namespace recon::daemon
