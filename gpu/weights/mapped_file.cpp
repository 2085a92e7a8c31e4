// POSIX open/fstat/mmap behind MappedFile (see mapped_file.h).
#include "gpu/weights/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace recon::gpu {

namespace {

// Closes the descriptor on every return path of open().
class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

Status errno_status(int err, const std::string& what, const std::string& path) {
  std::string message = what + " " + path + ": " + std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return not_found(std::move(message));
    case EACCES:
    case EPERM:
      return permission_denied(std::move(message));
    case EISDIR:
      return invalid_argument(std::move(message));
    default:
      return unavailable(std::move(message));
  }
}

}  // namespace

Result<MappedFile> MappedFile::open(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return errno_status(errno, "cannot open", path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return errno_status(errno, "cannot stat", path);
  if (!S_ISREG(st.st_mode)) return invalid_argument(path + " is not a regular file");
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) return MappedFile();
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (addr == MAP_FAILED) return errno_status(errno, "cannot mmap", path);
  return MappedFile(addr, size);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : addr_(std::exchange(other.addr_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    addr_ = std::exchange(other.addr_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  reset();
}

void MappedFile::reset() {
  if (addr_ != nullptr) ::munmap(addr_, size_);
  addr_ = nullptr;
  size_ = 0;
}

}  // namespace recon::gpu
