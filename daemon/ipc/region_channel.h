// RegionChannel: the Unix-socket side channel that carries what ZeroMQ cannot: file descriptors.
//
// AF_UNIX SOCK_SEQPACKET: each packet is one whole FlatBuffer (Request or Response) plus, for
// RegisterRegion, exactly one memfd in an SCM_RIGHTS control message. Packet boundaries are kept
// by the kernel, so a peer that dies mid-message leaves nothing half-read: the packet either
// arrived whole or not at all. The listening side learns the peer's pid/uid/gid from
// SO_PEERCRED (as of connect()). This file moves bytes and fds only; what the bytes mean is in
// region_service.h (daemon) and region_client.h (client).
//
// Receive rules (every refused fd is closed before returning, never leaked):
//  * at most one fd per packet; two or more → INVALID_ARGUMENT, all closed;
//  * MSG_CTRUNC (more fds than our control buffer holds; the kernel dropped the excess) →
//    INVALID_ARGUMENT, the ones received closed;
//  * MSG_TRUNC (packet larger than max_bytes) → RESOURCE_EXHAUSTED, fds closed;
//  * fds arrive with O_CLOEXEC (MSG_CMSG_CLOEXEC); other control messages are ignored.
// Sends use MSG_NOSIGNAL: a vanished peer is an UNAVAILABLE value, never a SIGPIPE.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "daemon/ipc/unique_fd.h"
#include "gpu/status.h"

namespace recon::daemon {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

enum class ReceiveEvent {
  kMessage,     // bytes (and maybe fd) hold one packet
  kPeerClosed,  // orderly shutdown or reset: drop the client
  kWouldBlock,  // non-blocking socket with nothing queued, or the timeout passed
};

struct ChannelMessage {
  ReceiveEvent event = ReceiveEvent::kWouldBlock;
  std::vector<uint8_t> bytes;  // a private copy (16-byte aligned): verify it in place
  UniqueFd fd;                 // the one fd sent with the packet, if any
};

class RegionChannel {
 public:
  // Packets larger than this are refused on receive unless the caller asks for more.
  static constexpr size_t kDefaultMaxMessageBytes = 64 << 10;
  // Size of the receive control buffer in fds: enough to see (and close) a handful of extras.
  static constexpr size_t kMaxFdsSeen = 16;

  RegionChannel() = default;
  // Takes a connected SOCK_SEQPACKET socket.
  explicit RegionChannel(UniqueFd socket) : socket_(std::move(socket)) {}

  // Client side: connects to the daemon's side-channel socket at `path`.
  static Result<RegionChannel> connect(const std::string& path);
  // Two connected ends (tests, in-process clients).
  static Result<std::pair<RegionChannel, RegionChannel>> socket_pair();

  int fd() const { return socket_.get(); }
  bool valid() const { return socket_.valid(); }
  Status set_nonblocking(bool nonblocking);

  // The peer's credentials as of connect() (SO_PEERCRED).
  Result<PeerCredentials> peer_credentials() const;

  // Sends one packet; `fd_to_pass` >= 0 is duplicated into the peer (still owned by the caller).
  // Peer gone → UNAVAILABLE; packet too large for the socket → INVALID_ARGUMENT.
  Status send(std::span<const uint8_t> bytes, int fd_to_pass = -1);

  // Receives one packet. timeout_ms < 0 waits as the socket's blocking mode says; >= 0 polls
  // first and answers kWouldBlock when nothing came in time.
  Result<ChannelMessage> receive(size_t max_bytes = kDefaultMaxMessageBytes, int timeout_ms = -1);

  void close() { socket_.reset(); }

 private:
  UniqueFd socket_;
};

// The daemon's listening side-channel socket.
class RegionChannelListener {
 public:
  RegionChannelListener() = default;

  // Binds and listens on `path` (mode 0660 unless `mode` says otherwise). A stale socket file
  // nobody listens on is replaced; a live one (another daemon) → UNAVAILABLE, never stolen.
  static Result<RegionChannelListener> bind(const std::string& path, int backlog = 64, mode_t mode = 0660);
  // Systemd socket activation: takes a listening AF_UNIX SOCK_SEQPACKET fd (checked).
  static Result<RegionChannelListener> adopt(UniqueFd listening_socket);

  int fd() const { return socket_.get(); }
  Status set_nonblocking(bool nonblocking);

  // Accepts one connection (CLOEXEC, blocking). kWouldBlock-like: UNAVAILABLE when the listener
  // is non-blocking and nobody is waiting.
  Result<RegionChannel> accept();

 private:
  explicit RegionChannelListener(UniqueFd socket) : socket_(std::move(socket)) {}
  UniqueFd socket_;
};

}  // namespace recon::daemon
