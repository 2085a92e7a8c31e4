#include "gpu/capabilities.h"

#include <algorithm>
#include <sstream>

namespace recon::gpu {

const char* device_type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "CPU";
    default:
      return "other";
  }
}

namespace {
std::string mib(VkDeviceSize bytes) {
  std::ostringstream s;
  s.precision(1);
  s << std::fixed << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB";
  return s.str();
}
std::string yes_no(bool b) {
  return b ? "yes" : "no";
}
}  // namespace

bool Capabilities::nv_coopmat_f16_16x16x16() const {
  return nv_cooperative_matrix && std::any_of(coopmat_shapes.begin(), coopmat_shapes.end(), [](const CoopMatShape& s) {
           return s.m == 16 && s.n == 16 && s.k == 16 && s.a_type == "f16" && s.b_type == "f16" && s.c_type == "f32" &&
                  s.result_type == "f32" && s.scope == "NV subgroup";
         });
}

std::string Capabilities::describe() const {
  std::ostringstream s;
  s << "  device:               " << device_name << " (" << device_type_name(device_type) << ")\n"
    << "  vendor/device id:     0x" << std::hex << vendor_id << "/0x" << device_id << std::dec << "\n"
    << "  driver:               " << driver_name << " " << driver_info << " (version " << driver_version << ")\n"
    << "  Vulkan API:           " << VK_API_VERSION_MAJOR(api_version) << "." << VK_API_VERSION_MINOR(api_version)
    << "." << VK_API_VERSION_PATCH(api_version) << "\n"
    << "  fp16 arithmetic:      " << yes_no(shader_float16) << "\n"
    << "  16-bit storage:       " << yes_no(storage_16bit) << "\n"
    << "  8-bit storage:        " << yes_no(storage_8bit) << "\n"
    << "  subgroup size:        " << subgroup_size << " (control " << yes_no(subgroup_size_control) << ", "
    << min_subgroup_size << ".." << max_subgroup_size << ")\n"
    << "  subgroup ops:         0x" << std::hex << subgroup_ops << std::dec << "\n"
    << "  NV cooperative matrix: " << yes_no(nv_cooperative_matrix) << "\n"
    << "  KHR cooperative matrix: " << yes_no(khr_cooperative_matrix) << "\n"
    << "  NV cooperative matrix2: " << yes_no(nv_cooperative_matrix2) << "\n";
  for (const auto& c : coopmat_shapes) {
    s << "    coopmat " << c.scope << " " << c.m << "x" << c.n << "x" << c.k << " A=" << c.a_type << " B=" << c.b_type
      << " C=" << c.c_type << " D=" << c.result_type << "\n";
  }
  if (nv_cooperative_matrix) {
    const CoopMatAccLayout& l = coopmat_acc_layout;
    s << "  coopmat accumulator:  ";
    if (l.two_rows_per_lane()) {
      s << l.elements << " elements per lane in two rows (second-row mask 0x" << std::hex << l.slot_mask << std::dec
        << "), " << l.row_lanes << " lanes per row\n";
    } else {
      s << "irregular or not probed\n";
    }
  }
  s << "  external host memory: " << yes_no(external_memory_host);
  if (external_memory_host) s << " (alignment " << min_imported_host_pointer_alignment << ")";
  s << "\n"
    << "  timeline semaphores:  " << yes_no(timeline_semaphore) << "\n"
    << "  maxStorageBufferRange: " << mib(max_storage_buffer_range) << "\n"
    << "  maxMemoryAllocationSize: " << mib(max_memory_allocation_size) << "\n"
    << "  shared memory:        " << max_compute_shared_memory / 1024 << " KiB\n"
    << "  workgroup invocations: " << max_workgroup_invocations << "\n"
    << "  shader cores (SMs):   " << (shader_core_count ? std::to_string(shader_core_count) : "not reported") << "\n"
    << "  memory heaps:\n";
  for (size_t i = 0; i < heaps.size(); ++i) {
    const auto& h = heaps[i];
    s << "    heap " << i << ": " << mib(h.size) << (h.device_local ? " device-local" : " host");
    if (memory_budget) s << ", budget " << mib(h.budget) << ", in use " << mib(h.usage);
    s << "\n";
  }
  return s.str();
}

}  // namespace recon::gpu
