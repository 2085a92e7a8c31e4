// ImageBuffer: a shared-memory region registered with the daemon once, into which the client
// writes images in place; ImageView: where one image lies inside it.
//
// The region is a memfd sealed with F_SEAL_SHRINK|F_SEAL_GROW (its size can never change, so
// neither side can be hit by SIGBUS) and passed to recond once over the regions socket. Requests
// then name (region, offset, height, width, stride): no pixel travels through ZeroMQ. The daemon
// may read an image at any time until the request that names it has been answered, so do not
// rewrite those bytes before PendingResult::get() (or ready()) says so. Several requests may
// name the same image at once.
//
// Thread safety: the buffer's memory is the caller's to synchronise; the object itself may be
// used from any thread. Destroying it unregisters the region (requests still using it finish
// first, on the daemon's side) and unmaps it here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "recon/client/export.h"
#include "recon/client/types.h"

namespace recon::client {

namespace detail {
class Region;
}
class Client;
class ImageBuffer;

// One RGB8 image (3 bytes per pixel, rows `stride` bytes apart) inside an ImageBuffer.
class ImageView {
 public:
  ImageView() = default;

  uint64_t offset() const { return offset_; }
  uint32_t width() const { return width_; }
  uint32_t height() const { return height_; }
  uint32_t stride() const { return stride_; }
  bool valid() const { return region_lo_ != 0 || region_hi_ != 0; }

 private:
  friend class ImageBuffer;
  friend class Client;
  uint64_t region_lo_ = 0, region_hi_ = 0;  // the region's id on the daemon
  uint64_t offset_ = 0;
  uint32_t width_ = 0, height_ = 0, stride_ = 0;
};

// A tensor (row-major, `dtype` elements of `shape`) inside an ImageBuffer: an input of a model that
// takes tensors (ONNX models), read by the daemon where it lies.
class BufferTensor {
 public:
  BufferTensor() = default;

  uint64_t offset() const { return offset_; }
  DType dtype() const { return dtype_; }
  const std::vector<uint64_t>& shape() const { return shape_; }
  bool valid() const { return region_lo_ != 0 || region_hi_ != 0; }

 private:
  friend class ImageBuffer;
  friend class Client;
  uint64_t region_lo_ = 0, region_hi_ = 0;
  uint64_t offset_ = 0;
  DType dtype_ = DType::kF32;
  std::vector<uint64_t> shape_;
};

class RECON_CLIENT_API ImageBuffer {
 public:
  ImageBuffer() = default;
  ImageBuffer(ImageBuffer&&) noexcept;
  ImageBuffer& operator=(ImageBuffer&&) noexcept;
  ~ImageBuffer();

  bool valid() const { return region_ != nullptr; }
  // Size in bytes (the requested size rounded up to whole pages).
  size_t size() const;
  // The mapped memory, writable.
  std::span<std::byte> bytes();
  std::span<const std::byte> bytes() const;
  uint8_t* data() { return reinterpret_cast<uint8_t*>(bytes().data()); }
  const std::string& label() const;
  // True when the daemon's GPU reads the region in place (VK_EXT_external_memory_host);
  // false when it copies through a staging buffer.
  bool zero_copy() const;

  // Copies an RGB8 image whose rows are `src_stride` bytes apart (0 = width * 3) to `offset`,
  // packed, and returns its view. Throws Error(kInvalidArgument) when it does not fit.
  ImageView write_rgb(uint64_t offset, const uint8_t* pixels, uint32_t width, uint32_t height, size_t src_stride = 0);
  // A view of an image already written in place (stride 0 = width * 3); bounds are checked.
  ImageView view(uint64_t offset, uint32_t width, uint32_t height, uint32_t stride = 0) const;
  // A view of a tensor at `offset` (written in place, e.g. through data()); bounds are checked.
  // Throws Error(kInvalidArgument) for an empty shape or dimension, or when it does not fit.
  BufferTensor tensor(uint64_t offset, DType dtype, std::vector<uint64_t> shape) const;
  // Copies `data` (exactly the tensor's bytes) to `offset` and returns its view.
  BufferTensor write_tensor(uint64_t offset, DType dtype, std::vector<uint64_t> shape, std::span<const std::byte> data);
  // Bytes an image of that size takes packed (width * height * 3).
  static uint64_t rgb_bytes(uint32_t width, uint32_t height) { return uint64_t{width} * height * 3; }

 private:
  friend class Client;
  explicit ImageBuffer(std::shared_ptr<detail::Region> region);
  std::shared_ptr<detail::Region> region_;
};

}  // namespace recon::client
