// The capability set of one Vulkan device: what kernels may rely on. Kernels choose their
// variants from these fields, never from device names.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>
#include <vector>

namespace recon::gpu {

// One cooperative-matrix shape the device multiplies natively (M×K · K×N → M×N).
struct CoopMatShape {
  uint32_t m = 0, n = 0, k = 0;
  std::string a_type, b_type, c_type, result_type;  // "f16", "f32", ...
  std::string scope;                                // "subgroup", "workgroup"
};

// How a 16×16 fp32 NV cooperative matrix (the tensor-core accumulator) spreads over a subgroup's
// lanes. VK_NV_cooperative_matrix leaves it to the implementation; Runtime::create probes it
// (gpu/coopmat_layout.h) so that kernels may keep per-row work in registers where it is regular.
struct CoopMatAccLayout {
  uint32_t elements = 0;   // per lane
  uint32_t slot_mask = 0;  // bit i set: the lane's element i lies in the second of its two rows
  uint32_t row_lanes = 0;  // lanes holding the same two rows: an aligned cluster (xor-shuffle reachable)
  // Every lane holds exactly two rows, half of its elements in each, and the probe found it so.
  bool two_rows_per_lane() const { return row_lanes != 0; }
};

struct Capabilities {
  std::string device_name;
  VkPhysicalDeviceType device_type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t vendor_id = 0, device_id = 0, driver_version = 0, api_version = 0;
  std::string driver_name, driver_info;
  uint8_t pipeline_cache_uuid[VK_UUID_SIZE] = {};

  bool shader_float16 = false;  // fp16 arithmetic in shaders
  bool storage_16bit = false;   // fp16/int16 in storage buffers
  bool storage_8bit = false;    // uint8 in storage buffers
  bool shader_int64 = false;
  uint32_t subgroup_size = 0;
  uint32_t min_subgroup_size = 0, max_subgroup_size = 0;
  bool subgroup_size_control = false;
  VkSubgroupFeatureFlags subgroup_ops = 0;  // VK_SUBGROUP_FEATURE_* supported in compute

  bool nv_cooperative_matrix = false;   // VK_NV_cooperative_matrix (our tensor-core path)
  bool khr_cooperative_matrix = false;  // VK_KHR_cooperative_matrix (reported, not used)
  bool nv_cooperative_matrix2 = false;  // VK_NV_cooperative_matrix2 (reported, not used)
  std::vector<CoopMatShape> coopmat_shapes;
  CoopMatAccLayout coopmat_acc_layout;  // probed at Runtime::create where nv_cooperative_matrix

  bool external_memory_host = false;  // VK_EXT_external_memory_host
  VkDeviceSize min_imported_host_pointer_alignment = 0;
  bool memory_budget = false;  // VK_EXT_memory_budget
  // VK_KHR_pipeline_executable_properties, enabled only with RECON_PIPELINE_STATS=1: the registry
  // then records each pipeline's compiler statistics (registers, shared memory, spills).
  bool pipeline_statistics = false;
  bool timeline_semaphore = false;

  VkDeviceSize max_storage_buffer_range = 0;
  VkDeviceSize min_storage_buffer_offset_alignment = 0;
  VkDeviceSize max_memory_allocation_size = 0;
  VkDeviceSize max_buffer_size = 0;
  uint32_t max_push_constants_size = 0;
  uint32_t max_compute_shared_memory = 0;
  uint32_t max_workgroup_invocations = 0;
  uint32_t max_workgroup_size[3] = {};
  uint32_t max_workgroup_count[3] = {};
  uint32_t shader_core_count = 0;  // SMs, from VK_NV_shader_sm_builtins (0: not reported)
  float timestamp_period_ns = 0;

  struct Heap {
    VkDeviceSize size = 0;
    VkDeviceSize budget = 0;  // 0 when VK_EXT_memory_budget is absent
    VkDeviceSize usage = 0;
    bool device_local = false;
  };
  std::vector<Heap> heaps;

  // Human-readable multi-line summary, as recon-info prints it.
  // NV subgroup-scope 16×16×16 fp16 × fp16 → fp32 cooperative matrices: the shape every
  // tensor-core kernel here uses.
  bool nv_coopmat_f16_16x16x16() const;
  std::string describe() const;
};

const char* device_type_name(VkPhysicalDeviceType type);

}  // namespace recon::gpu
