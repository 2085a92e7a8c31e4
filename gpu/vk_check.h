// One helper that turns every VkResult into a Status naming the call that failed.
#pragma once

#include <vulkan/vulkan.h>

#include "gpu/status.h"

namespace recon::gpu {

const char* vk_result_name(VkResult result);

// Out-of-memory results map to RESOURCE_EXHAUSTED so callers can tell them apart.
Status vk_status(VkResult result, const char* call);

}  // namespace recon::gpu

#define RECON_VK(call) ::recon::gpu::vk_status((call), #call)
#define RECON_VK_RETURN_IF_ERROR(call) RECON_RETURN_IF_ERROR(RECON_VK(call))
