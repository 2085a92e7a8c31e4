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

#include "daemon/ipc/shm_registry.h"
#include "gpu/host_import.h"
#include "gpu/runtime.h"

namespace recon::daemon {

class RegionImport : public RegionAttachment {
 public:
  RegionImport(size_t device, std::unique_ptr<gpu::HostImport> import) : device_(device), import_(std::move(import)) {}
  // The index of the device (Device::index) whose memory the import belongs to.
  size_t device() const { return device_; }
  const gpu::HostImport& host_import() const { return *import_; }

 private:
  size_t device_;
  std::unique_ptr<gpu::HostImport> import_;
};

using RegionImporter = std::function<std::unique_ptr<RegionAttachment>(const RegionInfo&)>;

// The RegionService importer for one device, or an empty function when the device cannot import
// host memory at all (the reason is logged once, here). The importer logs each import at debug
// level and each refusal as a warning, and returns nullptr for a refused one.
RegionImporter make_region_importer(size_t device, gpu::Runtime& runtime);

}  // namespace recon::daemon
