// A typed, shaped view of pooled device memory. Views share storage with their parent. The host
// copy is lazy: the first host() downloads once and caches until the GPU writes the tensor again.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "gpu/buffer_pool.h"
#include "gpu/status.h"

namespace recon::gpu {

class Runtime;

enum class DType : uint8_t { kF32, kF16, kU8, kI32 };
size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

using Shape = std::vector<int64_t>;
std::string shape_string(const Shape& shape);
int64_t shape_numel(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;

  // An uninitialised tensor from the pool of `role`.
  static Result<Tensor> empty(Runtime& rt, DType dtype, const Shape& shape, MemoryRole role = MemoryRole::kActivations);
  // A zeroed tensor from the pool of `role`, filled on the device (pool memory is recycled).
  static Result<Tensor> zeros(Runtime& rt, DType dtype, const Shape& shape, MemoryRole role = MemoryRole::kActivations);
  // A tensor initialised from host bytes (size must equal numel × dtype size).
  static Result<Tensor> from_host(Runtime& rt, DType dtype, const Shape& shape, const void* data, size_t bytes,
                                  MemoryRole role = MemoryRole::kActivations);
  // A tensor over `bytes` bytes of a buffer it does not own (imported host memory,
  // gpu/host_import.h): the caller keeps the buffer alive while this tensor or a view of it is used.
  static Tensor external(VkBuffer buffer, VkDeviceSize bytes, DType dtype, const Shape& shape);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }  // in elements, contiguous
  int64_t numel() const { return shape_numel(shape_); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  // Device location of the first element.
  VkBuffer buffer() const;
  VkDeviceSize offset() const;

  // A reshaped view of the same elements (numel must match).
  Result<Tensor> reshape(const Shape& shape) const;
  // Rows [begin, end) along the first axis, as a view.
  Result<Tensor> slice_rows(int64_t begin, int64_t end) const;

  Status upload(Runtime& rt, const void* data, size_t bytes) const;  // writes the device memory it views
  Status download(Runtime& rt, void* data, size_t bytes) const;
  // The lazy host copy: downloaded on first access, then cached.
  Result<std::span<const uint8_t>> host(Runtime& rt) const;
  // Drops the cached host copy; called by graphs after they write the tensor.
  void invalidate_host() const;
  // True while a cached host copy exists (for tests and metrics).
  bool host_cached() const;

 private:
  struct Storage {
    PoolBuffer buffer;
    VkBuffer external = VK_NULL_HANDLE;  // instead of `buffer` (Tensor::external)
    VkDeviceSize external_bytes = 0;
    mutable std::mutex host_mutex;  // guards host_copy and host_valid
    std::vector<uint8_t> host_copy;
    bool host_valid = false;
  };
  std::shared_ptr<Storage> storage_;
  VkDeviceSize byte_offset_ = 0;  // within the storage
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::vector<int64_t> strides_;

  void set_shape(const Shape& shape);
};

}  // namespace recon::gpu
