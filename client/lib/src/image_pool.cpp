// ImagePool: see image_pool.h.
#include "recon/client/image_pool.h"

#include <utility>

#include "recon/client/client.h"

namespace recon::client {
namespace {

constexpr uint64_t kAlignment = 256;

uint64_t aligned(uint64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

}  // namespace

ImagePool::Lease::Lease(Lease&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)), buffer_(std::move(other.buffer_)), views_(std::move(other.views_)) {}

ImagePool::Lease& ImagePool::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (pool_ != nullptr && buffer_.valid()) pool_->give_back(std::move(buffer_));
    pool_ = std::exchange(other.pool_, nullptr);
    buffer_ = std::move(other.buffer_);
    views_ = std::move(other.views_);
  }
  return *this;
}

ImagePool::Lease::~Lease() {
  if (pool_ != nullptr && buffer_.valid()) pool_->give_back(std::move(buffer_));
}

ImagePool::Lease ImagePool::stage(std::span<const HostImage> images) {
  uint64_t total = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const HostImage& image = images[i];
    if (image.pixels == nullptr || image.width == 0 || image.height == 0) {
      throw Error(ErrorCode::kInvalidArgument, ErrorSource::kClient,
                  "image " + std::to_string(i) + " has no pixels or a zero side");
    }
    total += aligned(ImageBuffer::rgb_bytes(image.width, image.height));
  }
  Lease lease;
  lease.pool_ = this;
  {
    std::lock_guard lock(mutex_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->size() >= total) {
        lease.buffer_ = std::move(*it);
        free_.erase(it);
        break;
      }
    }
  }
  if (!lease.buffer_.valid()) lease.buffer_ = client_.create_buffer(std::max<uint64_t>(total, 1), "images");
  uint64_t offset = 0;
  for (const HostImage& image : images) {
    lease.views_.push_back(lease.buffer_.write_rgb(offset, image.pixels, image.width, image.height, image.stride));
    offset += aligned(ImageBuffer::rgb_bytes(image.width, image.height));
  }
  return lease;
}

void ImagePool::give_back(ImageBuffer buffer) {
  std::lock_guard lock(mutex_);
  free_.push_back(std::move(buffer));
}

}  // namespace recon::client
