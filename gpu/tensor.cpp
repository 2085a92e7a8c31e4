#include "gpu/tensor.h"

#include <algorithm>
#include <cstring>

#include "gpu/runtime.h"
#include "gpu/transfer.h"

namespace recon::gpu {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 4;
    case DType::kF16:
      return 2;
    case DType::kU8:
      return 1;
    case DType::kI32:
      return 4;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kU8:
      return "u8";
    case DType::kI32:
      return "i32";
  }
  return "?";
}

std::string shape_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void Tensor::set_shape(const Shape& shape) {
  shape_ = shape;
  strides_.assign(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides_[i] = strides_[i + 1] * shape[i + 1];
}

Result<Tensor> Tensor::empty(Runtime& rt, DType dtype, const Shape& shape, MemoryRole role) {
  for (int64_t d : shape) {
    if (d < 0) return invalid_argument("negative dimension in shape " + shape_string(shape));
  }
  const int64_t n = shape_numel(shape);
  if (n > (int64_t{1} << 40)) return invalid_argument("tensor of shape " + shape_string(shape) + " is too large");
  Tensor t;
  t.storage_ = std::make_shared<Storage>();
  // Zero-element tensors still get a minimal allocation so they can be bound.
  VkDeviceSize bytes = std::max<VkDeviceSize>(static_cast<VkDeviceSize>(n) * dtype_size(dtype), 4);
  RECON_ASSIGN_OR_RETURN(t.storage_->buffer, rt.pool(role).acquire(bytes));
  t.dtype_ = dtype;
  t.set_shape(shape);
  return t;
}

Result<Tensor> Tensor::zeros(Runtime& rt, DType dtype, const Shape& shape, MemoryRole role) {
  RECON_ASSIGN_OR_RETURN(Tensor t, empty(rt, dtype, shape, role));
  // Pool slots are whole 256-byte classes, so rounding the size up to the 4 bytes vkCmdFillBuffer
  // needs stays inside this tensor's slot.
  const VkBuffer buffer = t.buffer();
  const VkDeviceSize offset = t.offset(), size = (t.bytes() + 3) / 4 * 4;
  RECON_RETURN_IF_ERROR(
      rt.context().run_once([&](VkCommandBuffer cmd) { vkCmdFillBuffer(cmd, buffer, offset, size, 0); }));
  return t;
}

Result<Tensor> Tensor::from_host(Runtime& rt, DType dtype, const Shape& shape, const void* data, size_t bytes,
                                 MemoryRole role) {
  RECON_ASSIGN_OR_RETURN(Tensor t, empty(rt, dtype, shape, role));
  RECON_RETURN_IF_ERROR(t.upload(rt, data, bytes));
  return t;
}

Tensor Tensor::external(VkBuffer buffer, VkDeviceSize bytes, DType dtype, const Shape& shape) {
  Tensor t;
  t.storage_ = std::make_shared<Storage>();
  t.storage_->external = buffer;
  t.storage_->external_bytes = bytes;
  t.dtype_ = dtype;
  t.set_shape(shape);
  return t;
}

VkBuffer Tensor::buffer() const {
  if (!storage_) return VK_NULL_HANDLE;
  return storage_->buffer.valid() ? storage_->buffer.buffer() : storage_->external;
}
VkDeviceSize Tensor::offset() const {
  return storage_ ? storage_->buffer.offset() + byte_offset_ : 0;
}

Result<Tensor> Tensor::reshape(const Shape& shape) const {
  if (shape_numel(shape) != numel()) {
    return invalid_argument("cannot reshape " + shape_string(shape_) + " to " + shape_string(shape));
  }
  Tensor v = *this;
  v.set_shape(shape);
  return v;
}

Result<Tensor> Tensor::slice_rows(int64_t begin, int64_t end) const {
  if (shape_.empty() || begin < 0 || end < begin || end > shape_[0]) {
    return invalid_argument("row slice [" + std::to_string(begin) + "," + std::to_string(end) + ") out of " +
                            shape_string(shape_));
  }
  Tensor v = *this;
  v.byte_offset_ += static_cast<VkDeviceSize>(begin * strides_[0]) * dtype_size(dtype_);
  Shape s = shape_;
  s[0] = end - begin;
  v.set_shape(s);
  return v;
}

Status Tensor::upload(Runtime& rt, const void* data, size_t bytes) const {
  if (!defined()) return invalid_argument("upload to an undefined tensor");
  if (bytes != this->bytes()) {
    return invalid_argument("upload of " + std::to_string(bytes) + " bytes into a tensor of " +
                            std::to_string(this->bytes()) + " bytes " + shape_string(shape_));
  }
  invalidate_host();
  return copy_host_to_device(rt, data, buffer(), offset(), bytes);
}

Status Tensor::download(Runtime& rt, void* data, size_t bytes) const {
  if (!defined()) return invalid_argument("download of an undefined tensor");
  if (bytes != this->bytes()) {
    return invalid_argument("download of " + std::to_string(bytes) + " bytes from a tensor of " +
                            std::to_string(this->bytes()) + " bytes");
  }
  return copy_device_to_host(rt, buffer(), offset(), data, bytes);
}

Result<std::span<const uint8_t>> Tensor::host(Runtime& rt) const {
  if (!defined()) return invalid_argument("host copy of an undefined tensor");
  std::lock_guard lock(storage_->host_mutex);
  if (!storage_->host_valid) {
    const PoolBuffer& b = storage_->buffer;
    const VkDeviceSize size = b.valid() ? b.size() : storage_->external_bytes;
    storage_->host_copy.resize(size);
    RECON_RETURN_IF_ERROR(copy_device_to_host(rt, buffer(), b.offset(), storage_->host_copy.data(), size));
    storage_->host_valid = true;
  }
  return std::span<const uint8_t>(storage_->host_copy.data() + byte_offset_, bytes());
}

void Tensor::invalidate_host() const {
  if (!storage_) return;
  std::lock_guard lock(storage_->host_mutex);
  storage_->host_valid = false;
  storage_->host_copy.clear();
  storage_->host_copy.shrink_to_fit();
}

bool Tensor::host_cached() const {
  if (!storage_) return false;
  std::lock_guard lock(storage_->host_mutex);
  return storage_->host_valid;
}

}  // namespace recon::gpu
