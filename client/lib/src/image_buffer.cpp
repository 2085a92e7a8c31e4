// ImageBuffer and ImageView: registered shared memory for images, and bounds-checked views.
#include "recon/client/image_buffer.h"

#include <cstring>
#include <limits>

#include "recon/client/error.h"
#include "region.h"

namespace recon::client {
ImageBuffer::ImageBuffer(std::shared_ptr<detail::Region> region) : region_(std::move(region)) {}
ImageBuffer::ImageBuffer(ImageBuffer&&) noexcept = default;
ImageBuffer& ImageBuffer::operator=(ImageBuffer&&) noexcept = default;
ImageBuffer::~ImageBuffer() = default;

size_t ImageBuffer::size() const {
  return region_ ? region_->memory().size() : 0;
}

std::span<std::byte> ImageBuffer::bytes() {
  if (!region_) return {};
  return region_->memory().bytes();
}

std::span<const std::byte> ImageBuffer::bytes() const {
  if (!region_) return {};
  return region_->memory().bytes();
}

const std::string& ImageBuffer::label() const {
  static const std::string none;
  return region_ ? region_->label() : none;
}

bool ImageBuffer::zero_copy() const {
  return region_ && region_->registered().zero_copy;
}

ImageView ImageBuffer::view(uint64_t offset, uint32_t width, uint32_t height, uint32_t stride) const {
  if (!region_) throw detail::invalid("view of an empty ImageBuffer");
  if (width == 0 || height == 0)
    throw detail::invalid("image of " + std::to_string(width) + "x" + std::to_string(height) + " pixels");
  const uint64_t row = uint64_t{width} * 3;
  if (row > std::numeric_limits<uint32_t>::max()) throw detail::invalid("image row too wide");
  const uint64_t pitch = stride == 0 ? row : stride;
  if (pitch < row)
    throw detail::invalid("stride " + std::to_string(stride) + " is less than width * 3 = " + std::to_string(row));
  // offset + (height - 1) * pitch + row <= size, without overflow: pitch < 2^32 and height < 2^32,
  // so (height - 1) * pitch + row < 2^64.
  const uint64_t size = this->size();
  const uint64_t span = uint64_t{height - 1} * pitch + row;
  if (offset > size || span > size - offset) {
    throw detail::invalid("image of " + std::to_string(width) + "x" + std::to_string(height) + " at offset " +
                          std::to_string(offset) + " does not fit into the " + std::to_string(size) + "-byte buffer");
  }
  ImageView out;
  out.region_lo_ = region_->registered().id.lo;
  out.region_hi_ = region_->registered().id.hi;
  out.offset_ = offset;
  out.width_ = width;
  out.height_ = height;
  out.stride_ = static_cast<uint32_t>(pitch);
  return out;
}

BufferTensor ImageBuffer::tensor(uint64_t offset, DType dtype, std::vector<uint64_t> shape) const {
  if (!region_) throw detail::invalid("tensor of an empty ImageBuffer");
  if (dtype_size(dtype) == 0) throw detail::invalid("tensor of an unknown element type");
  if (shape.empty()) throw detail::invalid("a tensor needs a shape (a scalar is [1])");
  uint64_t bytes = dtype_size(dtype);
  for (uint64_t d : shape) {
    if (d == 0 || bytes > std::numeric_limits<uint64_t>::max() / d)
      throw detail::invalid("tensor dimension of " + std::to_string(d));
    bytes *= d;
  }
  const uint64_t size = this->size();
  if (offset > size || bytes > size - offset) {
    throw detail::invalid("tensor of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                          " does not fit into the " + std::to_string(size) + "-byte buffer");
  }
  BufferTensor out;
  out.region_lo_ = region_->registered().id.lo;
  out.region_hi_ = region_->registered().id.hi;
  out.offset_ = offset;
  out.dtype_ = dtype;
  out.shape_ = std::move(shape);
  return out;
}

BufferTensor ImageBuffer::write_tensor(uint64_t offset, DType dtype, std::vector<uint64_t> shape,
                                       std::span<const std::byte> data) {
  BufferTensor out = tensor(offset, dtype, std::move(shape));
  uint64_t bytes = dtype_size(dtype);
  for (uint64_t d : out.shape()) bytes *= d;
  if (data.size() != bytes) {
    throw detail::invalid("write_tensor: " + std::to_string(data.size()) + " bytes for a tensor of " +
                          std::to_string(bytes));
  }
  std::memcpy(this->bytes().data() + offset, data.data(), data.size());
  return out;
}

ImageView ImageBuffer::write_rgb(uint64_t offset, const uint8_t* pixels, uint32_t width, uint32_t height,
                                 size_t src_stride) {
  const ImageView out = view(offset, width, height);
  if (pixels == nullptr) throw detail::invalid("write_rgb: no pixels");
  const size_t row = size_t{width} * 3;
  const size_t from = src_stride == 0 ? row : src_stride;
  if (from < row) throw detail::invalid("write_rgb: source stride is less than width * 3");
  std::byte* dst = bytes().data() + offset;
  if (from == row) {
    std::memcpy(dst, pixels, row * height);
  } else {
    for (uint32_t y = 0; y < height; ++y) std::memcpy(dst + y * row, pixels + y * from, row);
  }
  return out;
}

}  // namespace recon::client
