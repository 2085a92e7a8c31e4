// HostImport: a page-aligned host mapping imported into Vulkan as a storage buffer
// (VK_EXT_external_memory_host), so that shaders read the pages in place — the daemon's
// zero-copy path for client shared-memory regions (DESIGN.md §1.2).
//
// Rules learned on NVIDIA (notes/serving-anchors.md §2.7), which the caller must keep:
//  * import only READ-WRITE MAP_SHARED mappings: a failed import of a read-only mapping left the
//    device unable to allocate host-visible memory afterwards. create() cannot see the mapping's
//    protection; it checks everything else before it calls the driver;
//  * the mapping must outlive the import (the import holds no reference to the pages): destroy
//    the HostImport, after the GPU has finished with it, before munmap;
//  * importing pins the pages (about 0.16 ms per MiB on an H200): import once and reuse.
// Thread safety: create() and the destructor may run on any thread; the object is immutable.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>

#include "gpu/context.h"
#include "gpu/status.h"
#include "gpu/tensor.h"

namespace recon::gpu {

class HostImport {
 public:
  // Imports [data, data + bytes). UNIMPLEMENTED when the device lacks the extension;
  // INVALID_ARGUMENT when data or bytes is not a multiple of minImportedHostPointerAlignment, or
  // bytes is 0 or over maxMemoryAllocationSize; an error naming the driver call if it refuses.
  static Result<std::unique_ptr<HostImport>> create(Context& context, void* data, VkDeviceSize bytes);
  ~HostImport();
  HostImport(const HostImport&) = delete;
  HostImport& operator=(const HostImport&) = delete;

  VkBuffer buffer() const { return buffer_; }
  VkDeviceSize size() const { return size_; }
  const void* host_data() const { return data_; }
  const Context& context() const { return context_; }

  // The whole import as a flat uint8 tensor [size()] (bind ranges of it with ops::window). The
  // tensor does not own the import: it must not be used after the HostImport is destroyed.
  Tensor bytes() const;

 private:
  HostImport(Context& context, void* data, VkDeviceSize size) : context_(context), data_(data), size_(size) {}

  Context& context_;
  void* data_ = nullptr;
  VkDeviceSize size_ = 0;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
};

}  // namespace recon::gpu
