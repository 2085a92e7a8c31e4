// Mapping: mmap/munmap with errors as values.
#include "daemon/ipc/mapping.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace recon::daemon {

Result<Mapping> Mapping::map_shared(int fd, size_t size, int prot) {
  if (size == 0) return invalid_argument("cannot map 0 bytes");
  void* p = ::mmap(nullptr, size, prot, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    std::string what = "mmap of " + std::to_string(size) + " bytes failed: " + std::strerror(err);
    if (err == ENOMEM) return resource_exhausted(what);
    if (err == EACCES || err == EPERM) return permission_denied(what);
    return invalid_argument(what);
  }
  return Mapping(static_cast<uint8_t*>(p), size);
}

void Mapping::reset() {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace recon::daemon
