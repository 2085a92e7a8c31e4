// ConnectionMonitor: see connection_monitor.h.
#include "daemon/server/connection_monitor.h"

#include <zmq.h>

#include <cstring>
#include <utility>

namespace recon::daemon {

Result<ConnectionMonitor> ConnectionMonitor::attach(const ZmqContext& context, const ZmqRouter& router,
                                                    const std::string& name) {
  const std::string endpoint = "inproc://" + name;
  if (zmq_socket_monitor(router.handle(), endpoint.c_str(), ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) != 0) {
    return internal_error(std::string("zmq_socket_monitor: ") + zmq_strerror(zmq_errno()));
  }
  void* socket = zmq_socket(context.get(), ZMQ_PAIR);
  if (socket == nullptr) {
    (void)zmq_socket_monitor(router.handle(), nullptr, 0);
    return internal_error(std::string("zmq_socket(PAIR): ") + zmq_strerror(zmq_errno()));
  }
  ConnectionMonitor monitor(router.handle(), socket);
  const int linger = 0;
  (void)zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof(linger));
  if (zmq_connect(socket, endpoint.c_str()) != 0) {
    return internal_error("zmq_connect(" + endpoint + "): " + zmq_strerror(zmq_errno()));
  }
  return monitor;
}

ConnectionMonitor::ConnectionMonitor(ConnectionMonitor&& other) noexcept
    : router_(std::exchange(other.router_, nullptr)),
      socket_(std::exchange(other.socket_, nullptr)),
      epochs_(std::move(other.epochs_)) {}

ConnectionMonitor& ConnectionMonitor::operator=(ConnectionMonitor&& other) noexcept {
  if (this != &other) {
    close();
    router_ = std::exchange(other.router_, nullptr);
    socket_ = std::exchange(other.socket_, nullptr);
    epochs_ = std::move(other.epochs_);
  }
  return *this;
}

ConnectionMonitor::~ConnectionMonitor() {
  close();
}

void ConnectionMonitor::close() {
  if (router_ != nullptr) (void)zmq_socket_monitor(std::exchange(router_, nullptr), nullptr, 0);
  if (socket_ != nullptr) zmq_close(std::exchange(socket_, nullptr));
}

std::vector<ConnectionId> ConnectionMonitor::drain() {
  std::vector<ConnectionId> closed;
  while (socket_ != nullptr) {
    // An event is two frames: 6 bytes (uint16 event, uint32 value = the fd), then the endpoint.
    zmq_msg_t event;
    zmq_msg_init(&event);
    if (zmq_msg_recv(&event, socket_, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&event);
      break;
    }
    uint16_t kind = 0;
    uint32_t value = 0;
    if (zmq_msg_size(&event) >= 6) {
      std::memcpy(&kind, zmq_msg_data(&event), sizeof(kind));
      std::memcpy(&value, static_cast<const uint8_t*>(zmq_msg_data(&event)) + 2, sizeof(value));
    }
    const bool more = zmq_msg_more(&event) != 0;
    zmq_msg_close(&event);
    if (more) {
      zmq_msg_t address;
      zmq_msg_init(&address);
      (void)zmq_msg_recv(&address, socket_, 0);  // the rest of a message is already here
      zmq_msg_close(&address);
    }
    const int fd = static_cast<int>(value);
    if (kind == ZMQ_EVENT_ACCEPTED) {
      ++epochs_[fd];
    } else if (kind == ZMQ_EVENT_DISCONNECTED) {
      if (auto it = epochs_.find(fd); it != epochs_.end()) closed.push_back(ConnectionId{fd, it->second});
    }
  }
  return closed;
}

ConnectionId ConnectionMonitor::connection_of(int fd) const {
  const auto it = epochs_.find(fd);
  return ConnectionId{fd, it == epochs_.end() ? 0 : it->second};
}

}  // namespace recon::daemon
