// ImagePool: images that live in the caller's own memory (a decoded file, a numpy array, a C
// buffer), copied into registered shared memory for a request. It keeps the buffers it registered
// and reuses them: a request leases one large enough for all of its images and gives it back when
// the lease ends, which must be after the request's answer (the daemon reads the pixels until
// then). Thread-safe; the Client must outlive the pool, and the pool its leases. The Python package and the C API send
// their images through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "recon/client/export.h"
#include "recon/client/image_buffer.h"

namespace recon::client {

class Client;

// A packed-or-strided RGB8 image in the caller's memory (stride 0 = width * 3).
struct HostImage {
  const uint8_t* pixels = nullptr;
  uint32_t width = 0, height = 0;
  size_t stride = 0;
};

class RECON_CLIENT_API ImagePool {
 public:
  // The images of one request in one leased buffer; the buffer goes back to the pool when the
  // lease is destroyed.
  class RECON_CLIENT_API Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    ~Lease();
    const std::vector<ImageView>& views() const { return views_; }

   private:
    friend class ImagePool;
    ImagePool* pool_ = nullptr;
    ImageBuffer buffer_;
    std::vector<ImageView> views_;
  };

  explicit ImagePool(Client& client) : client_(client) {}
  ImagePool(const ImagePool&) = delete;
  ImagePool& operator=(const ImagePool&) = delete;

  // Copies `images` (each at a 256-byte aligned offset) into a buffer of the pool. Throws Error
  // (kInvalidArgument) for an image without pixels or sides.
  Lease stage(std::span<const HostImage> images);

 private:
  void give_back(ImageBuffer buffer);
  Client& client_;
  std::mutex mutex_;
  std::vector<ImageBuffer> free_;  // guarded by mutex_
};

}  // namespace recon::client
