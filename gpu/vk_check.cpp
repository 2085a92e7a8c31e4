#include "gpu/vk_check.h"

#include <string>

namespace recon::gpu {

const char* vk_result_name(VkResult result) {
  switch (result) {
#define RECON_CASE(x) \
  case x:             \
    return #x;
    RECON_CASE(VK_SUCCESS)
    RECON_CASE(VK_NOT_READY)
    RECON_CASE(VK_TIMEOUT)
    RECON_CASE(VK_INCOMPLETE)
    RECON_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    RECON_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    RECON_CASE(VK_ERROR_INITIALIZATION_FAILED)
    RECON_CASE(VK_ERROR_DEVICE_LOST)
    RECON_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    RECON_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    RECON_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    RECON_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    RECON_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    RECON_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    RECON_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    RECON_CASE(VK_ERROR_FRAGMENTED_POOL)
    RECON_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    RECON_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    RECON_CASE(VK_ERROR_FRAGMENTATION)
    RECON_CASE(VK_PIPELINE_COMPILE_REQUIRED)
#undef RECON_CASE
    default:
      return "VK_ERROR_UNKNOWN";
  }
}

Status vk_status(VkResult result, const char* call) {
  if (result == VK_SUCCESS) return Status::ok();
  std::string message =
      std::string(call) + " failed: " + vk_result_name(result) + " (" + std::to_string(static_cast<int>(result)) + ")";
  switch (result) {
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS:
      return resource_exhausted(message);
    case VK_ERROR_DEVICE_LOST:
      return unavailable(message);
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return unimplemented(message);
    default:
      return internal_error(message);
  }
}

}  // namespace recon::gpu
