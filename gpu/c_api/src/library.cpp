// runtime.h's library, device and context calls. Devices are enumerated once per process through
// an instance of their own (names, types, device-local memory, 16-bit storage), in the order
// gpu::Context numbers them, so that an index here is the index recon_context_create opens.
#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "gpu/runtime.h"
#include "state.h"

using namespace recon;
using namespace recon::runtime_c;

namespace {

Result<std::vector<recon_device_info>> enumerate_devices() {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "recon-runtime-list";
  app.apiVersion = VK_API_VERSION_1_3;
  VkInstanceCreateInfo create{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  create.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  if (VkResult r = vkCreateInstance(&create, nullptr, &instance); r != VK_SUCCESS) {
    return unavailable("vkCreateInstance failed (" + std::to_string(r) + "): no Vulkan driver?");
  }
  uint32_t count = 0;
  std::vector<VkPhysicalDevice> devices;
  VkResult r = vkEnumeratePhysicalDevices(instance, &count, nullptr);
  if (r == VK_SUCCESS) {
    devices.resize(count);
    r = vkEnumeratePhysicalDevices(instance, &count, devices.data());
  }
  std::vector<recon_device_info> infos;
  for (uint32_t i = 0; r == VK_SUCCESS && i < count; ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(devices[i], &p);
    VkPhysicalDeviceMemoryProperties memory;
    vkGetPhysicalDeviceMemoryProperties(devices[i], &memory);
    VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &storage16;
    vkGetPhysicalDeviceFeatures2(devices[i], &features);

    recon_device_info info{};
    info.struct_size = sizeof(info);
    info.index = i;
    info.type = static_cast<recon_device_type>(std::min<int>(p.deviceType, RECON_DEVICE_CPU));
    std::memcpy(info.name, p.deviceName, std::min(sizeof(info.name), sizeof(p.deviceName)));  // both 256
    info.name[sizeof(info.name) - 1] = 0;
    for (uint32_t h = 0; h < memory.memoryHeapCount; ++h) {
      if (memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
        info.memory_bytes += memory.memoryHeaps[h].size;
    }
    info.vulkan_api_version = p.apiVersion;
    info.supports_f16 = storage16.storageBuffer16BitAccess ? 1 : 0;
    infos.push_back(info);
  }
  vkDestroyInstance(instance, nullptr);
  if (r != VK_SUCCESS) return unavailable("vkEnumeratePhysicalDevices failed (" + std::to_string(r) + ")");
  return infos;
}

// The device list, read on first use; a failure is not kept, so a later call tries again.
Result<std::vector<recon_device_info>> devices() {
  static std::mutex mutex;
  static std::optional<std::vector<recon_device_info>> cached;
  std::lock_guard lock(mutex);
  if (!cached) {
    RECON_ASSIGN_OR_RETURN(cached, enumerate_devices());
  }
  return *cached;
}

}  // namespace

extern "C" {

uint32_t recon_runtime_abi_version(void) {
  return RECON_RUNTIME_ABI_VERSION;
}

const char* recon_runtime_version(void) {
  return RECON_RUNTIME_VERSION;
}

const char* recon_runtime_status_name(recon_status status) {
  switch (status) {
    case RECON_OK:
      return "OK";
    case RECON_UNKNOWN:
      return "UNKNOWN";
    default:
      if (status > RECON_OK && status <= RECON_CANCELLED) return status_code_name(static_cast<StatusCode>(status));
      return "UNKNOWN";
  }
}

const char* recon_runtime_last_error(void) {
  return last_error().c_str();
}

recon_status recon_device_count(uint32_t* count) {
  if (count == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_device_count: count is NULL");
  *count = 0;
  return guarded([&] {
    Result<std::vector<recon_device_info>> list = devices();
    if (!list.is_ok()) return fail("recon_device_count", list.status());
    *count = static_cast<uint32_t>(list->size());
    return RECON_OK;
  });
}

recon_status recon_device_describe(uint32_t index, recon_device_info* info) {
  if (info == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_device_describe: info is NULL");
  if (info->struct_size == 0) {
    return fail(RECON_INVALID_ARGUMENT,
                "recon_device_describe: info->struct_size is 0 (initialise it with RECON_INIT)");
  }
  return guarded([&] {
    Result<std::vector<recon_device_info>> list = devices();
    if (!list.is_ok()) return fail("recon_device_describe", list.status());
    if (index >= list->size()) {
      return fail(RECON_INVALID_ARGUMENT, "recon_device_describe: device index " + std::to_string(index) +
                                              " out of range (" + std::to_string(list->size()) + " devices)");
    }
    const size_t given = info->struct_size;
    recon_device_info full = (*list)[index];
    std::memcpy(info, &full, std::min(given, sizeof(full)));
    info->struct_size = given;
    return RECON_OK;
  });
}

recon_status recon_context_create(uint32_t device_index, const recon_context_options* options, recon_context** out) {
  if (out == nullptr) return fail(RECON_INVALID_ARGUMENT, "recon_context_create: out is NULL");
  *out = nullptr;
  if (options != nullptr && options->struct_size == 0) {
    return fail(RECON_INVALID_ARGUMENT,
                "recon_context_create: options->struct_size is 0 (initialise it with RECON_INIT)");
  }
  return guarded([&] {
    recon_context_options o{};
    if (options != nullptr) std::memcpy(&o, options, std::min(sizeof(o), options->struct_size));
    Result<std::vector<recon_device_info>> list = devices();
    if (!list.is_ok()) return fail("recon_context_create", list.status());
    if (device_index >= list->size()) {
      return fail(RECON_INVALID_ARGUMENT, "recon_context_create: device index " + std::to_string(device_index) +
                                              " out of range (" + std::to_string(list->size()) + " devices)");
    }
    gpu::RuntimeOptions ro;
    ro.context.device = std::to_string(device_index);
    ro.context.validation = o.validation != 0;
    ro.context.application_name = "recon-runtime";
    if (o.pipeline_cache_path != nullptr) ro.pipeline_cache_path = o.pipeline_cache_path;
    Result<std::unique_ptr<gpu::Runtime>> rt = gpu::Runtime::create(ro);
    if (!rt.is_ok()) return fail("recon_context_create", rt.status());
    *out = new recon_context{std::make_shared<ContextState>(std::move(rt).value())};
    return RECON_OK;
  });
}

void recon_context_release(recon_context* context) {
  delete context;  // tensors and sequences still alive keep the device open
}

}  // extern "C"
