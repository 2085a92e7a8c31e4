// Socket activation and self-bound Unix listening sockets. See socket_activation.h.
#include "daemon/service/socket_activation.h"

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace recon::daemon {
namespace {

int socket_type_constant(UnixSocketType type) {
  return type == UnixSocketType::kStream ? SOCK_STREAM : SOCK_SEQPACKET;
}

// The .socket unit line that makes a socket of this type, for error messages.
const char* listen_directive(UnixSocketType type) {
  return type == UnixSocketType::kStream ? "ListenStream=" : "ListenSequentialPacket=";
}

std::string describe_socket_type(int type) {
  switch (type) {
    case SOCK_STREAM:
      return "SOCK_STREAM";
    case SOCK_DGRAM:
      return "SOCK_DGRAM";
    case SOCK_SEQPACKET:
      return "SOCK_SEQPACKET";
    default:
      return "socket type " + std::to_string(type);
  }
}

// Says what `fd` is when it is not what we wanted (sd_is_socket_unix only says yes or no).
std::string describe_fd(int fd) {
  int family = 0;
  int type = 0;
  int listening = 0;
  socklen_t length = sizeof(int);
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &length) != 0) return "not a socket";
  length = sizeof(int);
  (void)::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length);
  length = sizeof(int);
  (void)::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length);
  std::string text = family == AF_UNIX    ? "an AF_UNIX "
                     : family == AF_INET  ? "an AF_INET "
                     : family == AF_INET6 ? "an AF_INET6 "
                                          : "a family " + std::to_string(family) + " ";
  text += describe_socket_type(type);
  text += listening ? " listening socket" : " socket that is not listening";
  return text;
}

struct NamesDeleter {
  // sd_listen_fds_with_names hands out a malloc'ed strv that only free() may release.
  void operator()(char** names) const {
    for (char** name = names; name != nullptr && *name != nullptr; ++name) std::free(*name);  // NOLINT
    std::free(names);  // NOLINT(cppcoreguidelines-no-malloc)
  }
};

Result<sockaddr_un> unix_address(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path[0] != '/') {
    // Abstract (@name) sockets ignore file permissions, so they cannot do access control.
    return invalid_argument("socket path must be absolute: '" + path + "'");
  }
  if (path.size() >= sizeof(address.sun_path)) {
    return invalid_argument("socket path is longer than " + std::to_string(sizeof(address.sun_path) - 1) +
                            " characters: '" + path + "'");
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  return address;
}

// True when something accepts connections on `path`.
bool someone_listens(const sockaddr_un& address, int type) {
  UniqueFd probe(::socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!probe) return false;
  const int r = ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  // EAGAIN: a listener whose backlog is full is still a listener.
  return r == 0 || errno == EAGAIN || errno == EINPROGRESS;
}

// Removes the socket file again unless dismissed (bind succeeded but a later step failed).
class UnlinkOnError {
 public:
  explicit UnlinkOnError(const std::string& path) : path_(path) {}
  ~UnlinkOnError() {
    if (armed_) ::unlink(path_.c_str());
  }
  void dismiss() { armed_ = false; }

 private:
  const std::string& path_;
  bool armed_ = true;
};

Status duplicate_name(const std::string& name, const std::string& shown) {
  return invalid_argument("socket activation passed two fds named '" + name +
                          "': each .socket unit of recond must have exactly one Listen line (" + shown + ")");
}

}  // namespace

const char* unix_socket_type_name(UnixSocketType type) {
  return type == UnixSocketType::kStream ? "stream" : "seqpacket";
}

// ---- ListenFds ----------------------------------------------------------------------------------

Result<ListenFds> ListenFds::from_environment() {
  // Copied first: sd_listen_fds_with_names unsets them, and an error message should show them.
  const char* fds_env = std::getenv("LISTEN_FDS");
  const char* names_env = std::getenv("LISTEN_FDNAMES");
  const std::string shown =
      std::string("LISTEN_FDS=") + (fds_env ? fds_env : "") + " LISTEN_FDNAMES=" + (names_env ? names_env : "");
  char** raw_names = nullptr;
  const int n = sd_listen_fds_with_names(/*unset_environment=*/1, &raw_names);
  std::unique_ptr<char*, NamesDeleter> names(raw_names);
  if (n < 0) return invalid_argument("malformed socket activation environment (" + shown + "): " + std::strerror(-n));

  // Own every fd first, so that an error below closes them all.
  std::vector<UniqueFd> fds;
  fds.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) fds.emplace_back(SD_LISTEN_FDS_START + i);

  ListenFds out;
  for (int i = 0; i < n; ++i) {
    const std::string name = (names && names.get()[i]) ? names.get()[i] : "unknown";
    if (out.fds_.count(name) != 0) return duplicate_name(name, shown);
    out.fds_.emplace(name, std::move(fds[static_cast<size_t>(i)]));
  }
  return out;
}

Result<std::optional<UniqueFd>> ListenFds::take(std::string_view name, UnixSocketType type) {
  const auto it = fds_.find(name);
  if (it == fds_.end()) return std::optional<UniqueFd>();
  const int fd = it->second.get();
  const int r = sd_is_socket_unix(fd, socket_type_constant(type), /*listening=*/1, nullptr, 0);
  if (r < 0) return invalid_argument(errno_text("socket-activated fd '" + std::string(name) + "'", -r));
  if (r == 0) {
    return invalid_argument("socket-activated fd '" + std::string(name) + "' is " + describe_fd(fd) +
                            "; expected a listening AF_UNIX " + unix_socket_type_name(type) + " socket (" +
                            listen_directive(type) + " in its .socket unit)");
  }
  UniqueFd taken = std::move(it->second);
  fds_.erase(it);
  return std::optional<UniqueFd>(std::move(taken));
}

std::vector<std::string> ListenFds::unclaimed_names() const {
  std::vector<std::string> names;
  for (const auto& [name, fd] : fds_) names.push_back(name);
  return names;
}

// ---- Binding ourselves ----------------------------------------------------------------------------

Result<UniqueFd> bind_unix_socket(const UnixSocketOptions& options) {
  const std::string& path = options.path;
  RECON_ASSIGN_OR_RETURN(const sockaddr_un address, unix_address(path));
  const int type = socket_type_constant(options.type);
  UniqueFd socket(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
  if (!socket) return internal_error(errno_text("socket(AF_UNIX)"));

  const auto* raw = reinterpret_cast<const sockaddr*>(&address);
  if (::bind(socket.get(), raw, sizeof(address)) != 0) {
    const int error = errno;
    if (error == ENOENT) {
      return unavailable("cannot bind " + path +
                         ": its directory does not exist (recond.service's RuntimeDirectory= or "
                         "tmpfiles.d/recon.conf creates /run/recon)");
    }
    if (error != EADDRINUSE) return unavailable(errno_text("binding " + path, error));
    if (someone_listens(address, type)) {
      return unavailable("another process is listening on " + path + " (is recond already running?)");
    }
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
      return unavailable(path + " exists and is not a socket; refusing to replace it");
    }
    if (::unlink(path.c_str()) != 0) return unavailable(errno_text("removing stale socket " + path));
    if (::bind(socket.get(), raw, sizeof(address)) != 0) return unavailable(errno_text("binding " + path));
  }
  UnlinkOnError cleanup(path);
  if (options.group && ::chown(path.c_str(), static_cast<uid_t>(-1), *options.group) != 0) {
    const int error = errno;
    std::string text = errno_text("giving " + path + " to group " + std::to_string(*options.group), error);
    if (error == EPERM) text += " (recond must be a member of that group, or run as root)";
    return permission_denied(text);
  }
  if (::chmod(path.c_str(), options.mode) != 0) return internal_error(errno_text("chmod " + path));
  if (::listen(socket.get(), options.backlog) != 0) return internal_error(errno_text("listen on " + path));
  cleanup.dismiss();
  return socket;
}

Status check_socket_file(const std::string& path, gid_t group, mode_t mode) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return not_found(errno_text("socket file " + path));
  if (!S_ISSOCK(st.st_mode)) return invalid_argument(path + " is not a socket");
  const mode_t actual = st.st_mode & 07777;
  if (st.st_gid == group && actual == mode) return Status::ok();
  char modes[32];
  std::snprintf(modes, sizeof(modes), "mode %04o, not %04o", static_cast<unsigned>(actual),
                static_cast<unsigned>(mode));
  return permission_denied(path + " has group " + std::to_string(st.st_gid) + ", not " + std::to_string(group) +
                           ", or " + modes +
                           ": clients may be unable to connect. If systemd re-owned /run/recon when starting "
                           "recond.service, run `systemd-tmpfiles --create recon.conf` and restart the recond "
                           "socket units");
}

Result<std::string> unix_socket_path(int fd) {
  sockaddr_un address{};
  socklen_t length = sizeof(address);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return invalid_argument(errno_text("getsockname"));
  }
  if (address.sun_family != AF_UNIX) return invalid_argument("not an AF_UNIX socket");
  const size_t offset = offsetof(sockaddr_un, sun_path);
  if (length <= offset || address.sun_path[0] == '\0') return std::string();  // unnamed or abstract
  return std::string(address.sun_path, strnlen(address.sun_path, length - offset));
}

Result<Listener> acquire_listener(ListenFds& fds, std::string_view name, const UnixSocketOptions& fallback) {
  RECON_ASSIGN_OR_RETURN(std::optional<UniqueFd> taken, fds.take(name, fallback.type));
  if (taken) {
    RECON_ASSIGN_OR_RETURN(std::string path, unix_socket_path(taken->get()));
    return Listener{std::move(*taken), std::move(path), true};
  }
  auto bound = bind_unix_socket(fallback);
  if (!bound) return bound.status().with_context(std::string(name) + " socket");
  return Listener{std::move(bound).value(), fallback.path, false};
}

Result<gid_t> resolve_group(const std::string& name) {
  if (name.empty()) return invalid_argument("empty group name");
  if (name.find_first_not_of("0123456789") == std::string::npos) {
    errno = 0;
    char* end = nullptr;
    const unsigned long value = std::strtoul(name.c_str(), &end, 10);
    if (errno != 0 || *end != '\0' || value >= static_cast<unsigned long>(static_cast<gid_t>(-1))) {
      return invalid_argument("group id out of range: " + name);
    }
    return static_cast<gid_t>(value);
  }
  std::vector<char> buffer(1024);
  for (;;) {
    group entry{};
    group* found = nullptr;
    const int r = ::getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
    if (r == ERANGE && buffer.size() < (size_t{1} << 20)) {
      buffer.resize(buffer.size() * 2);
      continue;
    }
    if (r != 0) return unavailable(errno_text("looking up group '" + name + "'", r));
    if (found == nullptr) {
      return not_found("group '" + name + "' does not exist (systemd-sysusers creates it from sysusers.d/recon.conf)");
    }
    return found->gr_gid;
  }
}

}  // namespace recon::daemon
