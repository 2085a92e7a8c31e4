// ZmqRouter: recond's ZeroMQ ROUTER sockets (client, manager, optional tcp) as RAII values with
// the checks the protocol needs: a per-frame size cap (ZMQ_MAXMSGSIZE: a larger frame makes
// libzmq drop the peer), a cap on the frames of one message (libzmq has none), non-blocking
// sends that report an unreachable peer instead of blocking, and the peer's credentials
// (SO_PEERCRED as libzmq records it in the "Peer-Address" metadata of ipc:// messages).
// It moves frames only; what they mean is the server's business. Not thread-safe: a socket
// belongs to the I/O thread.
#pragma once

#include <zmq.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "daemon/ipc/region_channel.h"
#include "gpu/status.h"

namespace recon::daemon {

// Owns one zmq context; terminate only after every socket of it is closed (member order).
class ZmqContext {
 public:
  static Result<ZmqContext> create();
  ZmqContext(ZmqContext&& other) noexcept : context_(std::exchange(other.context_, nullptr)) {}
  ZmqContext& operator=(ZmqContext&&) = delete;
  ZmqContext(const ZmqContext&) = delete;
  ZmqContext& operator=(const ZmqContext&) = delete;
  ~ZmqContext();
  void* get() const { return context_; }

 private:
  explicit ZmqContext(void* context) : context_(context) {}
  void* context_ = nullptr;
};

// One received frame, owned (zmq_msg_t), read-only. Its data may be unaligned and is not to be
// verified in place: copy_and_verify_request copies it.
class ZmqFrame {
 public:
  ZmqFrame() { zmq_msg_init(&msg_); }
  ZmqFrame(ZmqFrame&& other) noexcept;
  ZmqFrame& operator=(ZmqFrame&& other) noexcept;
  ZmqFrame(const ZmqFrame&) = delete;
  ZmqFrame& operator=(const ZmqFrame&) = delete;
  ~ZmqFrame() { zmq_msg_close(&msg_); }

  std::span<const uint8_t> data() const {
    return {static_cast<const uint8_t*>(zmq_msg_data(const_cast<zmq_msg_t*>(&msg_))),
            zmq_msg_size(const_cast<zmq_msg_t*>(&msg_))};
  }
  zmq_msg_t* raw() { return &msg_; }

 private:
  zmq_msg_t msg_;
};

// Where an answer goes: the routing id ROUTER prepended, and whether the peer is a REQ socket
// (which expects the empty delimiter frame back).
struct ZmqEnvelope {
  std::vector<uint8_t> routing_id;
  bool delimiter = false;
};

struct ZmqIncoming {
  ZmqEnvelope envelope;
  ZmqFrame body;
  // Frames after the routing id; > the allowed count means the message is refused (and its
  // frames were drained).
  size_t parts = 0;
  bool too_many_parts = false;
  // ipc:// peers only (uid/gid/pid at connect time); nullopt for tcp.
  std::optional<PeerCredentials> peer;
  // libzmq's "Peer-Address" as it came (tcp: the peer's IP address).
  std::string peer_address;
  // The descriptor of the connection the message came in on (ZMQ_SRCFD; ConnectionMonitor).
  int source_fd = -1;
};

// "…:uid:gid:pid" (libzmq's Peer-Address for ipc with SO_PEERCRED) → credentials.
std::optional<PeerCredentials> parse_peer_address(const char* address);

struct ZmqRouterOptions {
  uint64_t max_frame_bytes = uint64_t{64} << 20;
  size_t max_parts = 2;  // after the routing id
  int send_hwm = 10'000;
  int receive_hwm = 1'000;
  int linger_ms = 1'000;
};

class ZmqRouter {
 public:
  static Result<ZmqRouter> create(const ZmqContext& context, const ZmqRouterOptions& options);
  ZmqRouter(ZmqRouter&& other) noexcept
      : socket_(std::exchange(other.socket_, nullptr)),
        options_(other.options_),
        endpoint_(std::move(other.endpoint_)) {}
  ZmqRouter& operator=(ZmqRouter&& other) noexcept;
  ZmqRouter(const ZmqRouter&) = delete;
  ZmqRouter& operator=(const ZmqRouter&) = delete;
  ~ZmqRouter() { close(); }

  // Serves a listening AF_UNIX stream socket (socket-activated or bound by us): ZMQ_USE_FD, then
  // bind("ipc://" + path). libzmq owns the fd afterwards (it closes it with the socket).
  Status bind_listening_fd(int fd, const std::string& path);
  // Binds a tcp:// (or any) endpoint itself.
  Status bind(const std::string& endpoint);

  // The next message without blocking; nullopt when none is waiting.
  Result<std::optional<ZmqIncoming>> receive();
  // Sends `body` to the envelope's peer without blocking. A vanished peer or a full queue →
  // UNAVAILABLE (the answer is dropped; ZeroMQ would have dropped it silently).
  Status send(const ZmqEnvelope& envelope, std::span<const uint8_t> body);

  void* handle() const { return socket_; }
  const std::string& endpoint() const { return endpoint_; }
  void close();

 private:
  ZmqRouter(void* socket, const ZmqRouterOptions& options) : socket_(socket), options_(options) {}
  void* socket_ = nullptr;
  ZmqRouterOptions options_;
  std::string endpoint_;
};

}  // namespace recon::daemon
