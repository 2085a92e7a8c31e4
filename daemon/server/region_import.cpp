// Region imports: see region_import.h.
#include "daemon/server/region_import.h"

#include <chrono>
#include <string>

#include "gpu/log.h"

namespace recon::daemon {

RegionImporter make_region_importer(size_t device, gpu::Runtime& runtime) {
  const gpu::Capabilities& caps = runtime.caps();
  if (!caps.external_memory_host) {
    log_info("Zero-copy regions off on device " + std::to_string(device) + " (" + caps.device_name +
             "): no VK_EXT_external_memory_host; images are copied out of shared memory");
    return {};
  }
  log_info("Zero-copy regions on for device " + std::to_string(device) + " (" + caps.device_name +
           "): client regions are imported with VK_EXT_external_memory_host (alignment " +
           std::to_string(caps.min_imported_host_pointer_alignment) + ")");
  return [device, &runtime](const RegionInfo& region) -> std::unique_ptr<RegionAttachment> {
    const auto start = std::chrono::steady_clock::now();
    auto import = gpu::HostImport::create(runtime.context(), region.base, region.size);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!import.is_ok()) {
      log_warning("Failed to import region " + region.id.to_string() + " of client " + std::to_string(region.client) +
                  " (" + std::to_string(region.size) + " bytes) into device " + std::to_string(device) +
                  "; its images will be copied: " + import.status().to_string());
      return nullptr;
    }
    log_message(LogLevel::kDebug, "Imported region " + region.id.to_string() + " of client " +
                                      std::to_string(region.client) + " (" + std::to_string(region.size) +
                                      " bytes) into device " + std::to_string(device) + " in " + std::to_string(ms) +
                                      " ms");
    return std::make_unique<RegionImport>(device, std::move(import).value());
  };
}

}  // namespace recon::daemon
