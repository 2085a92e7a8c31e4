#include "gpu/context.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "gpu/log.h"
#include "gpu/vk_check.h"

namespace recon::gpu {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

// VK_KHR_cooperative_matrix is newer than Debian 12's Vulkan headers; we only read its
// properties for the capability report, so the few definitions needed are declared here.
constexpr VkStructureType kCoopMatPropertiesKhrSType = static_cast<VkStructureType>(1000506001);
struct CoopMatPropertiesKhr {
  VkStructureType sType;
  void* pNext;
  uint32_t MSize, NSize, KSize;
  VkComponentTypeNV AType, BType, CType, ResultType;
  VkBool32 saturatingAccumulation;
  VkScopeNV scope;
};
using GetCoopMatPropertiesKhr = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, CoopMatPropertiesKhr*);

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
}

const char* component_type_name(VkComponentTypeNV t) {
  switch (t) {
    case VK_COMPONENT_TYPE_FLOAT16_NV:
      return "f16";
    case VK_COMPONENT_TYPE_FLOAT32_NV:
      return "f32";
    case VK_COMPONENT_TYPE_FLOAT64_NV:
      return "f64";
    case VK_COMPONENT_TYPE_SINT8_NV:
      return "s8";
    case VK_COMPONENT_TYPE_SINT32_NV:
      return "s32";
    case VK_COMPONENT_TYPE_UINT8_NV:
      return "u8";
    case VK_COMPONENT_TYPE_UINT32_NV:
      return "u32";
    default:
      return "other";
  }
}

const char* scope_name(VkScopeNV s) {
  switch (s) {
    case VK_SCOPE_SUBGROUP_NV:
      return "subgroup";
    case VK_SCOPE_WORKGROUP_NV:
      return "workgroup";
    case VK_SCOPE_DEVICE_NV:
      return "device";
    default:
      return "other";
  }
}

// Runs a vkGetPhysicalDeviceCooperativeMatrixProperties{NV,KHR} query (count, then fill); empty on
// any failure, since the shapes only inform the capability report and kernel choice.
template <typename Props, typename Get>
std::vector<Props> query_coopmat_shapes(Get get, VkPhysicalDevice device, const Props& blank) {
  uint32_t n = 0;
  if (get == nullptr || get(device, &n, nullptr) != VK_SUCCESS) return {};
  std::vector<Props> shapes(n, blank);
  if (get(device, &n, shapes.data()) != VK_SUCCESS) return {};
  shapes.resize(n);
  return shapes;
}

// The NV and KHR property structs share these fields; only the result type's name differs.
template <typename Props>
CoopMatShape coopmat_shape(const Props& s, VkComponentTypeNV result, const char* api) {
  return {s.MSize,
          s.NSize,
          s.KSize,
          component_type_name(s.AType),
          component_type_name(s.BType),
          component_type_name(s.CType),
          component_type_name(result),
          std::string(api) + scope_name(s.scope)};
}

int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 1;
    default:
      return 0;
  }
}

bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
  return std::any_of(exts.begin(), exts.end(),
                     [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

Result<VkInstance> create_bare_instance(const std::string& app, bool validation, bool* validation_on) {
  VkApplicationInfo app_info{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app_info.pApplicationName = app.c_str();
  app_info.pEngineName = "recon";
  app_info.apiVersion = VK_API_VERSION_1_3;

  std::vector<const char*> layers;
  std::vector<const char*> extensions;
  *validation_on = false;
  if (validation) {
    uint32_t count = 0;
    vkEnumerateInstanceLayerProperties(&count, nullptr);
    std::vector<VkLayerProperties> props(count);
    vkEnumerateInstanceLayerProperties(&count, props.data());
    bool found = std::any_of(props.begin(), props.end(), [](const VkLayerProperties& p) {
      return std::strcmp(p.layerName, kValidationLayer) == 0;
    });
    if (found) {
      layers.push_back(kValidationLayer);
      extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
      extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
      *validation_on = true;
    } else {
      log_warning("validation requested but VK_LAYER_KHRONOS_validation is not installed; running without it");
    }
  }

  VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;

  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app_info;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  if (*validation_on) info.pNext = &features;

  VkInstance instance = VK_NULL_HANDLE;
  RECON_VK_RETURN_IF_ERROR(vkCreateInstance(&info, nullptr, &instance));
  return instance;
}

Result<std::vector<VkPhysicalDevice>> physical_devices(VkInstance instance) {
  uint32_t count = 0;
  RECON_VK_RETURN_IF_ERROR(vkEnumeratePhysicalDevices(instance, &count, nullptr));
  std::vector<VkPhysicalDevice> devices(count);
  RECON_VK_RETURN_IF_ERROR(vkEnumeratePhysicalDevices(instance, &count, devices.data()));
  devices.resize(count);
  if (devices.empty()) return unavailable("no Vulkan device found (is mesa-vulkan-drivers installed?)");
  return devices;
}

std::vector<DeviceInfo> describe_devices(const std::vector<VkPhysicalDevice>& devices) {
  std::vector<DeviceInfo> infos;
  for (uint32_t i = 0; i < devices.size(); ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(devices[i], &p);
    infos.push_back({i, p.deviceName, p.deviceType, p.apiVersion});
  }
  return infos;
}

}  // namespace

Result<std::vector<DeviceInfo>> Context::list_devices() {
  bool validation_on = false;
  RECON_ASSIGN_OR_RETURN(VkInstance instance, create_bare_instance("recon-list", false, &validation_on));
  auto devices = physical_devices(instance);
  std::vector<DeviceInfo> infos;
  if (devices.is_ok()) infos = describe_devices(devices.value());
  vkDestroyInstance(instance, nullptr);
  if (!devices.is_ok()) return devices.status();
  return infos;
}

Result<uint32_t> Context::select_device(const std::vector<DeviceInfo>& devices, const std::string& selector) {
  if (devices.empty()) return unavailable("no Vulkan device found");
  if (selector.empty()) {
    uint32_t best = 0;
    for (const auto& d : devices) {
      if (type_rank(d.type) > type_rank(devices[best].type)) best = d.index;
    }
    return best;
  }
  if (std::all_of(selector.begin(), selector.end(), [](unsigned char c) { return std::isdigit(c); })) {
    unsigned long index = std::strtoul(selector.c_str(), nullptr, 10);
    if (index >= devices.size()) {
      return not_found("device index " + selector + " out of range: " + std::to_string(devices.size()) +
                       " device(s) present");
    }
    return static_cast<uint32_t>(index);
  }
  std::string needle = lower(selector);
  for (const auto& d : devices) {
    if (lower(d.name).find(needle) != std::string::npos) return d.index;
  }
  std::string names;
  for (const auto& d : devices) names += (names.empty() ? "" : ", ") + d.name;
  return not_found("no device matches \"" + selector + "\" (devices: " + names + ")");
}

std::string Context::device_selector(const std::string& configured) {
  if (!configured.empty()) return configured;
  const char* env = std::getenv("RECON_DEVICE");
  return env != nullptr ? env : "";
}

Result<std::vector<uint32_t>> Context::select_devices(const std::vector<DeviceInfo>& devices,
                                                      const std::string& selector) {
  std::vector<uint32_t> out;
  if (lower(selector) == "all") {
    for (const auto& d : devices) {
      if (d.type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) out.push_back(d.index);
    }
    if (!out.empty()) return out;
    RECON_ASSIGN_OR_RETURN(const uint32_t best, select_device(devices, ""));
    return std::vector<uint32_t>{best};
  }
  const bool listed = selector.find(',') != std::string::npos;
  size_t begin = 0;
  while (true) {
    const size_t comma = selector.find(',', begin);
    std::string part = selector.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    part.erase(0, part.find_first_not_of(" \t"));
    part.erase(part.find_last_not_of(" \t") + 1);
    if (part.empty() && listed) return invalid_argument("an empty entry in the device list \"" + selector + "\"");
    RECON_ASSIGN_OR_RETURN(const uint32_t index, select_device(devices, part));
    if (std::find(out.begin(), out.end(), index) != out.end()) {
      return invalid_argument("device " + std::to_string(index) + " is named twice in \"" + selector + "\"");
    }
    out.push_back(index);
    if (comma == std::string::npos) return out;
    begin = comma + 1;
  }
}

Result<std::unique_ptr<Context>> Context::create(const ContextOptions& options) {
  std::unique_ptr<Context> ctx(new Context());
  RECON_RETURN_IF_ERROR(ctx->init(options));
  return ctx;
}

Status Context::init(const ContextOptions& options) {
  RECON_RETURN_IF_ERROR(create_instance(options));
  RECON_ASSIGN_OR_RETURN(auto devices, physical_devices(instance_));
  RECON_ASSIGN_OR_RETURN(device_index_, select_device(describe_devices(devices), device_selector(options.device)));
  physical_device_ = devices[device_index_];
  read_capabilities();
  RECON_RETURN_IF_ERROR(create_device());
  RECON_ASSIGN_OR_RETURN(once_, OneShot::create(device_, *compute_queue_));
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  RECON_VK_RETURN_IF_ERROR(vkCreateFence(device_, &fence_info, nullptr, &lost_probe_));
  return Status::ok();
}

Status Context::create_instance(const ContextOptions& options) {
  bool want_validation = options.validation || env_flag("RECON_VALIDATION");
  RECON_ASSIGN_OR_RETURN(instance_,
                         create_bare_instance(options.application_name, want_validation, &validation_enabled_));
  if (!validation_enabled_) return Status::ok();

  VkDebugUtilsMessengerCreateInfoEXT info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  info.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  info.pfnUserCallback = &Context::debug_callback;
  info.pUserData = this;
  auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
      vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
  if (create == nullptr) return internal_error("vkCreateDebugUtilsMessengerEXT not found");
  RECON_VK_RETURN_IF_ERROR(create(instance_, &info, nullptr, &messenger_));
  return Status::ok();
}

VkBool32 Context::debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
                                 const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* self = static_cast<Context*>(user);
  std::string message = data && data->pMessage ? data->pMessage : "(no message)";
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    self->validation_errors_.fetch_add(1);
    self->last_validation_error_ = message;
    log_error("Vulkan validation: " + message);
  } else {
    log_warning("Vulkan validation: " + message);
  }
  return VK_FALSE;
}

void Context::read_capabilities() {
  Capabilities& c = caps_;
  VkPhysicalDeviceSubgroupSizeControlProperties sg_control{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  VkPhysicalDeviceExternalMemoryHostPropertiesEXT host_props{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
  VkPhysicalDeviceVulkan11Properties p11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES};
  VkPhysicalDeviceVulkan12Properties p12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &p11;
  p11.pNext = &p12;
  p12.pNext = &sg_control;
  sg_control.pNext = &m3;

  uint32_t ext_count = 0;
  vkEnumerateDeviceExtensionProperties(physical_device_, nullptr, &ext_count, nullptr);
  std::vector<VkExtensionProperties> exts(ext_count);
  vkEnumerateDeviceExtensionProperties(physical_device_, nullptr, &ext_count, exts.data());
  c.external_memory_host = has_extension(exts, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  c.memory_budget = has_extension(exts, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  c.nv_cooperative_matrix = has_extension(exts, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  c.khr_cooperative_matrix = has_extension(exts, "VK_KHR_cooperative_matrix");
  c.nv_cooperative_matrix2 = has_extension(exts, "VK_NV_cooperative_matrix2");
  const char* stats_env = std::getenv("RECON_PIPELINE_STATS");
  c.pipeline_statistics = stats_env != nullptr && std::strcmp(stats_env, "1") == 0 &&
                          has_extension(exts, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  // The SM count sizes GEMM grids to whole waves (gpu/ops/matmul.cpp); NVIDIA reports it here.
  VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm_props{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
  void** tail = &m3.pNext;
  if (c.external_memory_host) {
    *tail = &host_props;
    tail = &host_props.pNext;
  }
  if (has_extension(exts, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) *tail = &sm_props;
  vkGetPhysicalDeviceProperties2(physical_device_, &props);
  c.shader_core_count = sm_props.shaderSMCount;

  const auto& p = props.properties;
  c.device_name = p.deviceName;
  c.device_type = p.deviceType;
  c.vendor_id = p.vendorID;
  c.device_id = p.deviceID;
  c.driver_version = p.driverVersion;
  c.api_version = p.apiVersion;
  c.driver_name = p12.driverName;
  c.driver_info = p12.driverInfo;
  std::memcpy(c.pipeline_cache_uuid, p.pipelineCacheUUID, VK_UUID_SIZE);
  c.subgroup_size = p11.subgroupSize;
  c.subgroup_ops = (p11.subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ? p11.subgroupSupportedOperations : 0;
  c.min_subgroup_size = sg_control.minSubgroupSize;
  c.max_subgroup_size = sg_control.maxSubgroupSize;
  c.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  c.min_storage_buffer_offset_alignment = p.limits.minStorageBufferOffsetAlignment;
  c.max_memory_allocation_size = m3.maxMemoryAllocationSize;
  c.max_push_constants_size = p.limits.maxPushConstantsSize;
  c.max_compute_shared_memory = p.limits.maxComputeSharedMemorySize;
  c.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    c.max_workgroup_size[i] = p.limits.maxComputeWorkGroupSize[i];
    c.max_workgroup_count[i] = p.limits.maxComputeWorkGroupCount[i];
  }
  c.timestamp_period_ns = p.limits.timestampPeriod;
  if (c.external_memory_host) c.min_imported_host_pointer_alignment = host_props.minImportedHostPointerAlignment;

  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &f11;
  f11.pNext = &f12;
  f12.pNext = &f13;
  vkGetPhysicalDeviceFeatures2(physical_device_, &features);
  c.shader_float16 = f12.shaderFloat16;
  c.storage_16bit = f11.storageBuffer16BitAccess;
  c.storage_8bit = f12.storageBuffer8BitAccess;
  c.shader_int64 = features.features.shaderInt64;
  c.timeline_semaphore = f12.timelineSemaphore;
  c.subgroup_size_control = f13.subgroupSizeControl;
  c.max_buffer_size = c.max_memory_allocation_size;  // maintenance4's maxBufferSize is at least this

  if (c.nv_cooperative_matrix) {
    auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
        vkGetInstanceProcAddr(instance_, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
    VkCooperativeMatrixPropertiesNV blank{VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV};
    for (const auto& s : query_coopmat_shapes(get, physical_device_, blank)) {
      c.coopmat_shapes.push_back(coopmat_shape(s, s.DType, "NV "));
    }
  }
  if (c.khr_cooperative_matrix) {
    auto get = reinterpret_cast<GetCoopMatPropertiesKhr>(
        vkGetInstanceProcAddr(instance_, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
    CoopMatPropertiesKhr blank{};
    blank.sType = kCoopMatPropertiesKhrSType;
    for (const auto& s : query_coopmat_shapes(get, physical_device_, blank)) {
      c.coopmat_shapes.push_back(coopmat_shape(s, s.ResultType, "KHR "));
    }
  }

  vkGetPhysicalDeviceMemoryProperties(physical_device_, &memory_properties_);
  c.heaps.clear();
  for (uint32_t i = 0; i < memory_properties_.memoryHeapCount; ++i) {
    Capabilities::Heap h;
    h.size = memory_properties_.memoryHeaps[i].size;
    h.device_local = memory_properties_.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
    c.heaps.push_back(h);
  }
  refresh_memory_budget();
}

void Context::refresh_memory_budget() {
  if (!caps_.memory_budget) return;
  VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
  VkPhysicalDeviceMemoryProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
  props.pNext = &budget;
  vkGetPhysicalDeviceMemoryProperties2(physical_device_, &props);
  for (size_t i = 0; i < caps_.heaps.size(); ++i) {
    caps_.heaps[i].budget = budget.heapBudget[i];
    caps_.heaps[i].usage = budget.heapUsage[i];
  }
}

Status Context::create_device() {
  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_device_, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_device_, &family_count, families.data());

  int compute = -1, transfer = -1;
  for (uint32_t i = 0; i < family_count; ++i) {
    if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && compute < 0) compute = static_cast<int>(i);
  }
  // A transfer-only family (a DMA engine) is the one worth a second queue.
  for (uint32_t i = 0; i < family_count; ++i) {
    VkQueueFlags f = families[i].queueFlags;
    if ((f & VK_QUEUE_TRANSFER_BIT) && !(f & VK_QUEUE_COMPUTE_BIT) && !(f & VK_QUEUE_GRAPHICS_BIT)) {
      transfer = static_cast<int>(i);
      break;
    }
  }
  if (compute < 0) return unimplemented("device " + caps_.device_name + " has no compute queue");
  if (families[compute].timestampValidBits == 0) caps_.timestamp_period_ns = 0;  // no GPU timings

  const float priorities[3] = {1.0f, 1.0f, 1.0f};
  const uint32_t compute_queue_count = std::min<uint32_t>(families[compute].queueCount, 3);
  std::vector<VkDeviceQueueCreateInfo> queues;
  VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  q.queueFamilyIndex = static_cast<uint32_t>(compute);
  q.queueCount = compute_queue_count;
  q.pQueuePriorities = priorities;
  queues.push_back(q);
  if (transfer >= 0) {
    q.queueFamilyIndex = static_cast<uint32_t>(transfer);
    q.queueCount = 1;
    queues.push_back(q);
  }

  // Features: enable what the device has among what our kernels can use.
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV fcm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceFeatures2 have{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  have.pNext = &f11;
  f11.pNext = &f12;
  f12.pNext = &f13;
  if (caps_.nv_cooperative_matrix) f13.pNext = &fcm;
  vkGetPhysicalDeviceFeatures2(physical_device_, &have);

  if (!f12.timelineSemaphore) return unimplemented("device " + caps_.device_name + " lacks timeline semaphores");
  if (!f13.synchronization2) return unimplemented("device " + caps_.device_name + " lacks synchronization2");

  VkPhysicalDeviceVulkan11Features e11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features e12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan13Features e13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV ecm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceFeatures2 enable{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  enable.pNext = &e11;
  e11.pNext = &e12;
  e12.pNext = &e13;
  enable.features.shaderInt64 = have.features.shaderInt64;
  enable.features.shaderInt16 = have.features.shaderInt16;
  e11.storageBuffer16BitAccess = f11.storageBuffer16BitAccess;
  e11.uniformAndStorageBuffer16BitAccess = f11.uniformAndStorageBuffer16BitAccess;
  e12.shaderFloat16 = f12.shaderFloat16;
  e12.shaderInt8 = f12.shaderInt8;
  e12.storageBuffer8BitAccess = f12.storageBuffer8BitAccess;
  e12.uniformAndStorageBuffer8BitAccess = f12.uniformAndStorageBuffer8BitAccess;
  e12.timelineSemaphore = VK_TRUE;
  e12.vulkanMemoryModel = f12.vulkanMemoryModel;
  e12.vulkanMemoryModelDeviceScope = f12.vulkanMemoryModelDeviceScope;
  e12.shaderSubgroupExtendedTypes = f12.shaderSubgroupExtendedTypes;
  e13.synchronization2 = VK_TRUE;
  e13.subgroupSizeControl = f13.subgroupSizeControl;
  e13.computeFullSubgroups = f13.computeFullSubgroups;
  e13.maintenance4 = f13.maintenance4;
  e13.pipelineCreationCacheControl = f13.pipelineCreationCacheControl;

  enabled_device_extensions_.clear();
  if (caps_.nv_cooperative_matrix && fcm.cooperativeMatrix) {
    ecm.cooperativeMatrix = VK_TRUE;
    e13.pNext = &ecm;
    enabled_device_extensions_.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  } else {
    caps_.nv_cooperative_matrix = false;
  }
  if (caps_.external_memory_host) {
    enabled_device_extensions_.push_back(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    enabled_device_extensions_.push_back(VK_KHR_EXTERNAL_MEMORY_EXTENSION_NAME);
  }
  if (caps_.memory_budget) enabled_device_extensions_.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR estats{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (caps_.pipeline_statistics) {
    estats.pipelineExecutableInfo = VK_TRUE;
    estats.pNext = enable.pNext;
    enable.pNext = &estats;
    enabled_device_extensions_.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  }

  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &enable;
  info.queueCreateInfoCount = static_cast<uint32_t>(queues.size());
  info.pQueueCreateInfos = queues.data();
  info.enabledExtensionCount = static_cast<uint32_t>(enabled_device_extensions_.size());
  info.ppEnabledExtensionNames = enabled_device_extensions_.data();
  RECON_VK_RETURN_IF_ERROR(vkCreateDevice(physical_device_, &info, nullptr, &device_));

  compute_queue_ = std::make_unique<Queue>();
  compute_queue_->family = static_cast<uint32_t>(compute);
  vkGetDeviceQueue(device_, compute_queue_->family, 0, &compute_queue_->queue);
  if (compute_queue_count > 1) {
    second_compute_queue_ = std::make_unique<Queue>();
    second_compute_queue_->family = compute_queue_->family;
    vkGetDeviceQueue(device_, second_compute_queue_->family, 1, &second_compute_queue_->queue);
  }
  if (compute_queue_count > 2) {
    copy_queue_ = std::make_unique<Queue>();
    copy_queue_->family = compute_queue_->family;
    vkGetDeviceQueue(device_, copy_queue_->family, 2, &copy_queue_->queue);
  }
  if (transfer >= 0) {
    transfer_queue_ = std::make_unique<Queue>();
    transfer_queue_->family = static_cast<uint32_t>(transfer);
    vkGetDeviceQueue(device_, transfer_queue_->family, 0, &transfer_queue_->queue);
  }
  return Status::ok();
}

Result<uint32_t> Context::find_memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                                           VkMemoryPropertyFlags preferred) const {
  int fallback = -1;
  for (uint32_t i = 0; i < memory_properties_.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    VkMemoryPropertyFlags flags = memory_properties_.memoryTypes[i].propertyFlags;
    if ((flags & required) != required) continue;
    if ((flags & preferred) == preferred) return i;
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  if (fallback >= 0) return static_cast<uint32_t>(fallback);
  return unimplemented("no memory type with the required properties");
}

bool Context::device_lost() const {
  return vkGetFenceStatus(device_, lost_probe_) == VK_ERROR_DEVICE_LOST;
}

Status Context::run_once(const std::function<void(VkCommandBuffer)>& record) {
  return once_->run(record);
}

Context::~Context() {
  if (device_ != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device_);
    once_.reset();
    if (lost_probe_ != VK_NULL_HANDLE) vkDestroyFence(device_, lost_probe_, nullptr);
    vkDestroyDevice(device_, nullptr);
  }
  if (messenger_ != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
}

}  // namespace recon::gpu
