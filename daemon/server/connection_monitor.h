// ConnectionMonitor: which ZeroMQ connections of one ROUTER socket are gone, so that the remote
// sessions they opened end with them instead of holding their slots until the idle timeout.
//
// libzmq reports connections by file descriptor (zmq_socket_monitor: ACCEPTED and DISCONNECTED
// events) and tells which descriptor a message came in on (ZMQ_SRCFD). Descriptors are reused,
// so a connection is named by (fd, epoch): the epoch counts the ACCEPTED events seen for that
// fd. The events arrive on their own inproc socket, in order; libzmq posts a connection's
// ACCEPTED event before any of its messages, so draining the events before reading a message's
// fd gives that message's connection. A connection whose ACCEPTED event was somehow not seen
// keeps epoch 0 and is never reported closed: its sessions fall back to the idle timeout.
// I/O thread only.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/server/zmq_router.h"
#include "gpu/status.h"

namespace recon::daemon {

struct ConnectionId {
  int fd = -1;
  uint64_t epoch = 0;
  bool operator==(const ConnectionId&) const = default;
};

class ConnectionMonitor {
 public:
  // Starts monitoring `router` through the inproc endpoint `name` (unique per context). The
  // monitor must go before the router: it stops the monitoring first, so that libzmq never posts
  // an event (the router's last disconnections) to a reader that is gone.
  static Result<ConnectionMonitor> attach(const ZmqContext& context, const ZmqRouter& router, const std::string& name);
  ConnectionMonitor() = default;
  ConnectionMonitor(ConnectionMonitor&& other) noexcept;
  ConnectionMonitor& operator=(ConnectionMonitor&& other) noexcept;
  ConnectionMonitor(const ConnectionMonitor&) = delete;
  ConnectionMonitor& operator=(const ConnectionMonitor&) = delete;
  ~ConnectionMonitor();

  // The socket to poll for events (nullptr when not attached).
  void* handle() const { return socket_; }
  // Reads every waiting event; returns the connections that closed since the last call.
  std::vector<ConnectionId> drain();
  // The connection a message that came in on `fd` belongs to (call drain() first).
  ConnectionId connection_of(int fd) const;

 private:
  ConnectionMonitor(void* router, void* socket) : router_(router), socket_(socket) {}
  void close();

  void* router_ = nullptr;  // the monitored ROUTER (it outlives this object)
  void* socket_ = nullptr;  // ZMQ_PAIR connected to the router's monitor endpoint
  std::unordered_map<int, uint64_t> epochs_;
};

}  // namespace recon::daemon
