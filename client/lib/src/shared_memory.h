// SharedMemory: a sealed memfd and this process's read-write mapping of it: the client half of
// every region (image buffers and fetched-tensor output). Sealed F_SEAL_SHRINK|F_SEAL_GROW|
// F_SEAL_SEAL, never write-sealed: the daemon maps it read-write (NVIDIA cannot import read-only
// mappings) and writes fetched tensors into it. Knows nothing about the daemon.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "unique_fd.h"

namespace recon::client::detail {

// `value` rounded up to a multiple of `alignment` (> 0).
inline uint64_t align_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Rounds up to a multiple of the page size (region sizes must be one).
uint64_t round_up_to_pages(uint64_t bytes);

class SharedMemory {
 public:
  // memfd_create(MFD_CLOEXEC|MFD_ALLOW_SEALING), ftruncate to round_up_to_pages(bytes), seal,
  // mmap(PROT_READ|PROT_WRITE, MAP_SHARED). Throws Error (kResourceExhausted when out of memory).
  static SharedMemory create(const std::string& name, uint64_t bytes);

  SharedMemory() = default;
  SharedMemory(SharedMemory&& other) noexcept;
  SharedMemory& operator=(SharedMemory&& other) noexcept;
  ~SharedMemory();

  int fd() const { return fd_.get(); }
  size_t size() const { return size_; }
  std::byte* data() const { return data_; }
  std::span<std::byte> bytes() const { return {data_, size_}; }

 private:
  void unmap() noexcept;
  UniqueFd fd_;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace recon::client::detail
