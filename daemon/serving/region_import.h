// The zero-copy half of client regions (DESIGN.md §1.2): at RegisterRegion the daemon imports
// the region's pages into the GPU once (gpu::HostImport, VK_EXT_external_memory_host) and hangs
// the import on the region (RegionAttachment), so that the worker prepares images straight from
// client memory. ShmRegistry destroys the attachment only after the region's last lease — every
// request reading it has finished its GPU work — and before munmap.
//
// Only what ShmRegistry maps is imported: sealed memfds, mapped READ-WRITE MAP_SHARED, page
// aligned (NVIDIA must never be asked to import a read-only mapping: notes/serving-anchors.md
// §2.7). A refused import leaves the region on the copy path; the client sees zero_copy = false.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "daemon/ipc/shm_registry.h"
#include "gpu/host_import.h"
#include "gpu/runtime.h"

namespace recon::daemon {

// A region's imports, one per device (index = Device::index; null where that device refused or
// cannot import).
class RegionImport : public RegionAttachment {
 public:
  explicit RegionImport(std::vector<std::unique_ptr<gpu::HostImport>> by_device) : by_device_(std::move(by_device)) {}
  // The import into `device`, or nullptr.
  const gpu::HostImport* on(size_t device) const {
    return device < by_device_.size() ? by_device_[device].get() : nullptr;
  }

 private:
  std::vector<std::unique_ptr<gpu::HostImport>> by_device_;
};

// The import into `device` of the region `lease` holds, or nullptr (no lease, not imported there).
const gpu::HostImport* region_import_on(const RegionLease& lease, size_t device);

using RegionImporter = std::function<std::unique_ptr<RegionAttachment>(const RegionInfo&)>;

// The RegionService importer for the devices (runtimes[i] is device i): each region is imported
// into every device that can import host memory, so that any device's worker reads its images and
// writes its fetches in place. Empty when no device can import at all (the reasons are logged
// once, here). Logs each import at debug level and each refusal as a warning; returns nullptr for
// a region that no device imported.
RegionImporter make_region_importer(std::vector<gpu::Runtime*> runtimes);

}  // namespace recon::daemon
