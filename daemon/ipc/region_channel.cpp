// RegionChannel: SOCK_SEQPACKET send/receive with SCM_RIGHTS, SO_PEERCRED, listener setup.
#include "daemon/ipc/region_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

namespace recon::daemon {
namespace {

Result<sockaddr_un> unix_address(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return invalid_argument("socket path must have 1.." + std::to_string(sizeof(address.sun_path) - 1) +
                            " characters: '" + path + "'");
  }
  if (path[0] == '@' || path[0] == '\0') {
    // Abstract sockets ignore file permissions, so they cannot do access control.
    return invalid_argument("abstract socket names are not allowed: '" + path + "'");
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  return address;
}

Status set_fd_nonblocking(int fd, bool nonblocking) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return internal_error(errno_text("fcntl F_GETFL"));
  const int wanted = nonblocking ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (wanted != flags && ::fcntl(fd, F_SETFL, wanted) != 0) {
    return internal_error(errno_text("fcntl F_SETFL"));
  }
  return Status::ok();
}

Result<UniqueFd> new_seqpacket_socket() {
  UniqueFd socket(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!socket) return internal_error(errno_text("socket(AF_UNIX, SOCK_SEQPACKET)"));
  return socket;
}

}  // namespace

// ---- RegionChannel ------------------------------------------------------------------------------

Result<RegionChannel> RegionChannel::connect(const std::string& path) {
  RECON_ASSIGN_OR_RETURN(const sockaddr_un address, unix_address(path));
  RECON_ASSIGN_OR_RETURN(UniqueFd socket, new_seqpacket_socket());
  int rc;
  do {
    rc = ::connect(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    std::string what = "connecting to " + path + ": " + std::strerror(err);
    if (err == EACCES || err == EPERM) return permission_denied(what);
    return unavailable(what);
  }
  return RegionChannel(std::move(socket));
}

Result<std::pair<RegionChannel, RegionChannel>> RegionChannel::socket_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return internal_error(errno_text("socketpair(AF_UNIX, SOCK_SEQPACKET)"));
  }
  return std::pair{RegionChannel(UniqueFd(fds[0])), RegionChannel(UniqueFd(fds[1]))};
}

Status RegionChannel::set_nonblocking(bool nonblocking) {
  return set_fd_nonblocking(socket_.get(), nonblocking);
}

Result<PeerCredentials> RegionChannel::peer_credentials() const {
  ucred cred{};
  socklen_t length = sizeof(cred);
  if (::getsockopt(socket_.get(), SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0 || length != sizeof(cred)) {
    return internal_error(errno_text("getsockopt SO_PEERCRED"));
  }
  return PeerCredentials{cred.pid, cred.uid, cred.gid};
}

Status RegionChannel::send(std::span<const uint8_t> bytes, int fd_to_pass) {
  if (bytes.empty()) return invalid_argument("refusing to send an empty packet (reads as EOF)");
  iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd_to_pass >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(header), &fd_to_pass, sizeof(int));
  }
  ssize_t sent;
  do {
    sent = ::sendmsg(socket_.get(), &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    const int err = errno;
    if (err == EPIPE || err == ECONNRESET || err == ENOTCONN) {
      return unavailable("side-channel peer closed the connection");
    }
    if (err == EAGAIN || err == EWOULDBLOCK) return unavailable("side channel is full (peer not reading)");
    if (err == EMSGSIZE) {
      return invalid_argument("packet of " + std::to_string(bytes.size()) + " bytes is too large");
    }
    if (err == EBADF && fd_to_pass >= 0) return invalid_argument("fd to pass is not open");
    return internal_error(errno_text("sendmsg"));
  }
  if (static_cast<size_t>(sent) != bytes.size()) {
    return internal_error("sendmsg sent " + std::to_string(sent) + " of " + std::to_string(bytes.size()) +
                          " bytes of a packet");
  }
  return Status::ok();
}

Result<ChannelMessage> RegionChannel::receive(size_t max_bytes, int timeout_ms) {
  ChannelMessage out;
  if (timeout_ms >= 0) {
    pollfd poller{socket_.get(), POLLIN, 0};
    int ready;
    do {
      ready = ::poll(&poller, 1, timeout_ms);
    } while (ready < 0 && errno == EINTR);
    if (ready < 0) return internal_error(errno_text("poll"));
    if (ready == 0) return out;  // kWouldBlock
  }

  // The packet is verified in place: std::vector's storage comes from operator new and is
  // aligned to __STDCPP_DEFAULT_NEW_ALIGNMENT__ (16), as FlatBuffers wants.
  std::vector<uint8_t> bytes(max_bytes);
  iovec iov{bytes.data(), bytes.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsSeen)];
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);

  ssize_t received;
  do {
    received = ::recvmsg(socket_.get(), &message, MSG_CMSG_CLOEXEC);
  } while (received < 0 && errno == EINTR);
  if (received < 0) {
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) return out;  // kWouldBlock
    if (err == ECONNRESET || err == ENOTCONN || err == EPIPE) {
      out.event = ReceiveEvent::kPeerClosed;
      return out;
    }
    return internal_error(errno_text("recvmsg"));
  }

  // Take ownership of every fd first, so that each refusal below closes them all.
  std::vector<UniqueFd> fds;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const auto* data = CMSG_DATA(header);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, data + i * sizeof(int), sizeof(int));
      fds.emplace_back(fd);
    }
  }
  if ((message.msg_flags & MSG_CTRUNC) != 0) {
    return invalid_argument(
        "packet carried more file descriptors than allowed (at most 1); "
        "all were closed");
  }
  if ((message.msg_flags & MSG_TRUNC) != 0) {
    return resource_exhausted("packet larger than " + std::to_string(max_bytes) + " bytes refused");
  }
  if (fds.size() > 1) {
    return invalid_argument("packet carried " + std::to_string(fds.size()) +
                            " file descriptors (at most 1); all were closed");
  }
  if (received == 0 && fds.empty()) {
    // SEQPACKET reads 0 at EOF; we never send empty packets, so 0 means the peer is gone.
    out.event = ReceiveEvent::kPeerClosed;
    return out;
  }
  out.event = ReceiveEvent::kMessage;
  bytes.resize(static_cast<size_t>(received));
  out.bytes = std::move(bytes);
  if (!fds.empty()) out.fd = std::move(fds.front());
  return out;
}

// ---- RegionChannelListener ---------------------------------------------------------------------

Result<RegionChannelListener> RegionChannelListener::bind(const std::string& path, int backlog, mode_t mode) {
  RECON_ASSIGN_OR_RETURN(const sockaddr_un address, unix_address(path));
  RECON_ASSIGN_OR_RETURN(UniqueFd socket, new_seqpacket_socket());
  const auto* raw = reinterpret_cast<const sockaddr*>(&address);
  if (::bind(socket.get(), raw, sizeof(address)) != 0) {
    if (errno != EADDRINUSE) return unavailable(errno_text(("binding " + path).c_str()));
    // Someone listening there? Then it is another daemon: never take its socket over.
    auto probe = RegionChannel::connect(path);
    if (probe.is_ok()) return unavailable("another process is listening on " + path);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
      return unavailable(path + " exists and is not a socket");
    }
    if (::unlink(path.c_str()) != 0) return unavailable(errno_text(("removing stale " + path).c_str()));
    if (::bind(socket.get(), raw, sizeof(address)) != 0) {
      return unavailable(errno_text(("binding " + path).c_str()));
    }
  }
  if (::chmod(path.c_str(), mode) != 0) return internal_error(errno_text(("chmod " + path).c_str()));
  if (::listen(socket.get(), backlog) != 0) return internal_error(errno_text("listen"));
  return RegionChannelListener(std::move(socket));
}

Result<RegionChannelListener> RegionChannelListener::adopt(UniqueFd listening_socket) {
  int type = 0;
  int listening = 0;
  socklen_t length = sizeof(type);
  if (::getsockopt(listening_socket.get(), SOL_SOCKET, SO_TYPE, &type, &length) != 0) {
    return invalid_argument(errno_text("adopted fd: getsockopt SO_TYPE"));
  }
  length = sizeof(listening);
  if (::getsockopt(listening_socket.get(), SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) != 0) {
    return invalid_argument(errno_text("adopted fd: getsockopt SO_ACCEPTCONN"));
  }
  sockaddr_storage address{};
  length = sizeof(address);
  if (::getsockname(listening_socket.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return invalid_argument(errno_text("adopted fd: getsockname"));
  }
  if (address.ss_family != AF_UNIX || type != SOCK_SEQPACKET || !listening) {
    return invalid_argument(
        "adopted fd is not a listening AF_UNIX SOCK_SEQPACKET socket "
        "(ListenSequentialPacket= in the .socket unit)");
  }
  return RegionChannelListener(std::move(listening_socket));
}

Status RegionChannelListener::set_nonblocking(bool nonblocking) {
  return set_fd_nonblocking(socket_.get(), nonblocking);
}

Result<RegionChannel> RegionChannelListener::accept() {
  int fd;
  do {
    fd = ::accept4(socket_.get(), nullptr, nullptr, SOCK_CLOEXEC);
  } while (fd < 0 && (errno == EINTR || errno == ECONNABORTED));
  if (fd < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return unavailable("no pending connection");
    if (errno == EMFILE || errno == ENFILE) return resource_exhausted(errno_text("accept4"));
    return internal_error(errno_text("accept4"));
  }
  return RegionChannel(UniqueFd(fd));
}

}  // namespace recon::daemon
