// Device part of ServerSnapshot: see server_snapshot.h.
#include "daemon/server/server_snapshot.h"

namespace recon::daemon {
namespace {

std::string vk_version(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

}  // namespace

const char* daemon_state_name(wire::DaemonState state) {
  switch (state) {
    case wire::DaemonState::STARTING:
      return "starting";
    case wire::DaemonState::WARMING:
      return "warming";
    case wire::DaemonState::READY:
      return "ready";
    case wire::DaemonState::DEGRADED:
      return "degraded";
    case wire::DaemonState::STOPPING:
      return "stopping";
  }
  return "unknown";
}

DeviceSnapshot snapshot_device(Device& device, uint64_t result_bytes) {
  DeviceSnapshot out;
  gpu::Runtime& rt = device.runtime();
  const gpu::Capabilities& caps = rt.caps();
  out.index = static_cast<uint32_t>(device.index());
  out.name = caps.device_name;
  out.vendor_id = caps.vendor_id;
  out.device_id = caps.device_id;
  out.driver_version =
      caps.driver_name.empty() ? std::to_string(caps.driver_version) : caps.driver_name + " " + caps.driver_info;
  out.api_version = vk_version(caps.api_version);
  if (caps.shader_float16) out.capabilities.push_back("fp16");
  if (caps.storage_16bit) out.capabilities.push_back("storage_16bit");
  if (caps.storage_8bit) out.capabilities.push_back("storage_8bit");
  if (caps.subgroup_size > 0) out.capabilities.push_back("subgroup");
  if (caps.nv_cooperative_matrix) out.capabilities.push_back("cooperative_matrix");
  if (caps.external_memory_host) out.capabilities.push_back("external_memory_host");
  if (caps.memory_budget) out.capabilities.push_back("memory_budget");
  if (caps.timeline_semaphore) out.capabilities.push_back("timeline_semaphore");
  // Heap sizes as of device creation (refreshing the budget would race the worker's use of caps).
  for (const auto& heap : caps.heaps) {
    if (!heap.device_local) continue;
    out.device_local_total_bytes += heap.size;
    out.device_local_budget_bytes += heap.budget;
  }
  out.activations = rt.pool(gpu::MemoryRole::kActivations).stats();
  out.weights = rt.pool(gpu::MemoryRole::kWeights).stats();
  out.staging = rt.pool(gpu::MemoryRole::kStaging).stats();
  // What this daemon holds in device memory (weights + activations pools), not the whole heap.
  out.device_local_used_bytes = out.activations.reserved_bytes + out.weights.reserved_bytes;
  out.weight_bytes = device.weight_bytes();
  out.result_bytes = result_bytes;
  out.work_items = device.work_items();
  if (device.lost()) out.error = device.lost_status().message();
  out.models = device.models();
  return out;
}

}  // namespace recon::daemon
