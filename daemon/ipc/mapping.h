// Mapping: sole owner of one mmap'ed range, unmapped on destruction. Move-only.
// Used for client shared-memory regions; it knows nothing about who the memory belongs to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "gpu/status.h"

namespace recon::daemon {

class Mapping {
 public:
  Mapping() = default;
  Mapping(Mapping&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  Mapping& operator=(Mapping&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { reset(); }

  // mmap(nullptr, size, prot, MAP_SHARED, fd, 0). The mapping keeps the file alive: the fd may be
  // closed afterwards. ENOMEM → RESOURCE_EXHAUSTED, EACCES/EPERM → PERMISSION_DENIED.
  static Result<Mapping> map_shared(int fd, size_t size, int prot);

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool valid() const { return data_ != nullptr; }

  void reset();

 private:
  Mapping(uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace recon::daemon
