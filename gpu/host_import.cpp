// HostImport: see host_import.h.
#include "gpu/host_import.h"

#include <string>

#include "gpu/vk_check.h"

namespace recon::gpu {

Result<std::unique_ptr<HostImport>> HostImport::create(Context& context, void* data, VkDeviceSize bytes) {
  const Capabilities& caps = context.caps();
  if (!caps.external_memory_host) {
    return unimplemented("the device has no VK_EXT_external_memory_host: host memory cannot be imported");
  }
  const VkDeviceSize align = caps.min_imported_host_pointer_alignment;
  const auto address = reinterpret_cast<uintptr_t>(data);
  if (data == nullptr || bytes == 0 || align == 0 || address % align != 0 || bytes % align != 0) {
    return invalid_argument("host import of " + std::to_string(bytes) + " bytes at " + std::to_string(address) +
                            ": pointer and size must be non-zero multiples of " + std::to_string(align));
  }
  if (bytes > caps.max_memory_allocation_size || bytes > caps.max_buffer_size) {
    return invalid_argument("host import of " + std::to_string(bytes) + " bytes is over the device's limit of " +
                            std::to_string(std::min(caps.max_memory_allocation_size, caps.max_buffer_size)));
  }
  VkDevice device = context.device();
  auto get_properties = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
      vkGetDeviceProcAddr(device, "vkGetMemoryHostPointerPropertiesEXT"));
  if (get_properties == nullptr) return unimplemented("vkGetMemoryHostPointerPropertiesEXT is not available");

  std::unique_ptr<HostImport> import(new HostImport(context, data, bytes));
  const VkExternalMemoryHandleTypeFlagBits handle_type = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  VkMemoryHostPointerPropertiesEXT pointer_props{VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
  RECON_VK_RETURN_IF_ERROR(get_properties(device, handle_type, data, &pointer_props));

  VkExternalMemoryBufferCreateInfo external{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  external.handleTypes = handle_type;
  VkBufferCreateInfo buffer_info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  buffer_info.pNext = &external;
  buffer_info.size = bytes;
  buffer_info.usage =
      VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  buffer_info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  RECON_VK_RETURN_IF_ERROR(vkCreateBuffer(device, &buffer_info, nullptr, &import->buffer_));
  VkMemoryRequirements requirements;
  vkGetBufferMemoryRequirements(device, import->buffer_, &requirements);
  if (requirements.size > bytes) {
    return internal_error("the imported buffer needs " + std::to_string(requirements.size) + " bytes, more than the " +
                          std::to_string(bytes) + " imported");
  }
  // Coherent: the client's writes become visible to the device at submission without a flush
  // (we never map this memory, so we could not flush it).
  auto type = context.find_memory_type(pointer_props.memoryTypeBits & requirements.memoryTypeBits,
                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0);
  if (!type.is_ok()) return type.status().with_context("no host-coherent memory type can import host pointers");

  VkImportMemoryHostPointerInfoEXT import_info{VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
  import_info.handleType = handle_type;
  import_info.pHostPointer = data;
  VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  allocate.pNext = &import_info;
  allocate.allocationSize = bytes;
  allocate.memoryTypeIndex = *type;
  RECON_VK_RETURN_IF_ERROR(vkAllocateMemory(device, &allocate, nullptr, &import->memory_));
  RECON_VK_RETURN_IF_ERROR(vkBindBufferMemory(device, import->buffer_, import->memory_, 0));
  return import;
}

HostImport::~HostImport() {
  VkDevice device = context_.device();
  if (buffer_ != VK_NULL_HANDLE) vkDestroyBuffer(device, buffer_, nullptr);
  if (memory_ != VK_NULL_HANDLE) vkFreeMemory(device, memory_, nullptr);
}

Tensor HostImport::bytes() const {
  return Tensor::external(buffer_, size_, DType::kU8, {static_cast<int64_t>(size_)});
}

}  // namespace recon::gpu
