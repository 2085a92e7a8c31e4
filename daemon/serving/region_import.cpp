// Region imports: see region_import.h.
#include "daemon/serving/region_import.h"

#include <chrono>
#include <string>

#include "gpu/log.h"

namespace recon::daemon {

const gpu::HostImport* region_import_on(const RegionLease& lease, size_t device) {
  if (!lease) return nullptr;
  const auto* import = dynamic_cast<const RegionImport*>(lease.attachment());
  return import != nullptr ? import->on(device) : nullptr;
}

RegionImporter make_region_importer(std::vector<gpu::Runtime*> runtimes) {
  bool any = false;
  for (size_t device = 0; device < runtimes.size(); ++device) {
    const gpu::Capabilities& caps = runtimes[device]->caps();
    if (!caps.external_memory_host) {
      log_info("Zero-copy regions off on device " + std::to_string(device) + " (" + caps.device_name +
               "): no VK_EXT_external_memory_host; images are copied out of shared memory");
      continue;
    }
    any = true;
    log_info("Zero-copy regions on for device " + std::to_string(device) + " (" + caps.device_name +
             "): client regions are imported with VK_EXT_external_memory_host (alignment " +
             std::to_string(caps.min_imported_host_pointer_alignment) + ")");
  }
  if (!any) return {};
  return [runtimes](const RegionInfo& region) -> std::unique_ptr<RegionAttachment> {
    std::vector<std::unique_ptr<gpu::HostImport>> imports(runtimes.size());
    bool imported = false;
    for (size_t device = 0; device < runtimes.size(); ++device) {
      if (!runtimes[device]->caps().external_memory_host) continue;
      const auto start = std::chrono::steady_clock::now();
      auto import = gpu::HostImport::create(runtimes[device]->context(), region.base, region.size);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (!import.is_ok()) {
        log_warning("Failed to import region " + region.id.to_string() + " of client " + std::to_string(region.client) +
                    " (" + std::to_string(region.size) + " bytes) into device " + std::to_string(device) +
                    "; it copies that region's images: " + import.status().to_string());
        continue;
      }
      log_message(LogLevel::kDebug, "Imported region " + region.id.to_string() + " of client " +
                                        std::to_string(region.client) + " (" + std::to_string(region.size) +
                                        " bytes) into device " + std::to_string(device) + " in " + std::to_string(ms) +
                                        " ms");
      imports[device] = std::move(import).value();
      imported = true;
    }
    if (!imported) return nullptr;
    return std::make_unique<RegionImport>(std::move(imports));
  };
}

}  // namespace recon::daemon
