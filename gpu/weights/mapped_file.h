// A read-only memory mapping of a whole file, owned RAII-style (the fd is closed once mapped).
// Knows nothing about file formats. If another process truncates the file while it is mapped,
// reads past the new end raise SIGBUS; weight files are expected to be immutable while served.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "gpu/status.h"

namespace recon::gpu {

class MappedFile {
 public:
  // kNotFound for a missing file, kPermissionDenied when unreadable, kInvalidArgument for a
  // directory or other non-regular file, kUnavailable for other I/O failures.
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(addr_), size_}; }

 private:
  MappedFile(void* addr, std::size_t size) : addr_(addr), size_(size) {}
  void reset();

  void* addr_ = nullptr;  // nullptr for an empty file
  std::size_t size_ = 0;
};

}  // namespace recon::gpu
