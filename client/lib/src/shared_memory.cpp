// SharedMemory: memfd creation, sealing and mapping.
#include "shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "recon/client/error.h"

namespace recon::client::detail {
namespace {

[[noreturn]] void throw_errno(const std::string& what, int err) {
  const ErrorCode code = (err == ENOMEM || err == ENOSPC || err == EMFILE || err == ENFILE)
                             ? ErrorCode::kResourceExhausted
                             : ErrorCode::kInternal;
  throw Error(code, ErrorSource::kClient, what + ": " + std::strerror(err));
}

}  // namespace

uint64_t round_up_to_pages(uint64_t bytes) {
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if (bytes == 0) return page;
  return (bytes + page - 1) / page * page;
}

SharedMemory SharedMemory::create(const std::string& name, uint64_t bytes) {
  const uint64_t size = round_up_to_pages(bytes);
  SharedMemory out;
  out.fd_ = UniqueFd(::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!out.fd_) throw_errno("memfd_create", errno);
  if (::ftruncate(out.fd_.get(), static_cast<off_t>(size)) != 0) throw_errno("ftruncate of a memfd", errno);
  // SHRINK|GROW: the size is fixed for both sides (no SIGBUS). SEAL: nobody adds seals later.
  if (::fcntl(out.fd_.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    throw_errno("sealing a memfd (F_ADD_SEALS)", errno);
  }
  void* data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, out.fd_.get(), 0);
  if (data == MAP_FAILED) throw_errno("mmap of a memfd", errno);
  out.data_ = static_cast<std::byte*>(data);
  out.size_ = static_cast<size_t>(size);
  return out;
}

SharedMemory::SharedMemory(SharedMemory&& other) noexcept
    : fd_(std::move(other.fd_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

SharedMemory& SharedMemory::operator=(SharedMemory&& other) noexcept {
  if (this != &other) {
    unmap();
    fd_ = std::move(other.fd_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SharedMemory::~SharedMemory() {
  unmap();
}

void SharedMemory::unmap() noexcept {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace recon::client::detail
