// RequestPump: librecon's I/O thread. It alone owns the ZeroMQ DEALER sockets (the client socket
// and, connected on first use, the manager socket): user threads queue finished requests with
// send(), the thread sends them, matches answers to requests by request_id, verifies them and
// completes their Calls. It also enforces each request's timeout and watches the session's side
// channel: when the daemon hangs up, every pending and later request fails with UNAVAILABLE at
// once instead of waiting for its timeout.
//
// ZeroMQ sockets are not thread-safe; keeping them on one thread is what makes Client safe to
// use from many threads. The queue between callers and the thread is guarded by a mutex and
// signalled through an eventfd that the thread polls next to the sockets.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "call.h"
#include "unique_fd.h"

namespace recon::client::detail {

enum class Target { kClient, kManager };

class RequestPump {
 public:
  // Endpoints are ZeroMQ endpoints ("ipc:///run/recon/client.sock"). `watch_fd` (the side
  // channel; -1 = none) is only polled for hang-up, never read.
  RequestPump(std::string client_endpoint, std::string manager_endpoint, int watch_fd);
  ~RequestPump();
  RequestPump(const RequestPump&) = delete;
  RequestPump& operator=(const RequestPump&) = delete;

  // Queues a finished Request. `call` null: the answer is read and dropped (fire-and-forget).
  // `timeout` zero: no limit. Never blocks on the network; fails the call (does not throw) when
  // the connection is gone.
  void send(Target target, uint64_t request_id, std::vector<uint8_t> bytes, std::shared_ptr<Call> call,
            std::chrono::milliseconds timeout);

  // Empty while the connection is usable; otherwise why not.
  std::string closed_reason() const;

 private:
  struct Outgoing {
    Target target;
    uint64_t request_id;
    std::vector<uint8_t> bytes;
    std::shared_ptr<Call> call;
    std::chrono::milliseconds timeout;
  };
  struct Pending {
    std::shared_ptr<Call> call;                      // null: fire-and-forget
    std::chrono::steady_clock::time_point deadline;  // max(): none
    std::chrono::milliseconds timeout{0};
    bool late = false;  // timed out; kept a while so that a late answer reaches the orphan handler
  };

  void run();
  void* socket_for(Target target);
  void send_queued();
  void receive_all(void* socket);
  void handle_frame(std::vector<uint8_t> payload);
  void expire(std::chrono::steady_clock::time_point now);
  void close_all(const std::string& reason);
  int poll_timeout_ms(std::chrono::steady_clock::time_point now) const;

  const std::string client_endpoint_, manager_endpoint_;
  const int watch_fd_;
  UniqueFd wake_;  // eventfd: the queue has work, or stop

  // Owned by the I/O thread only (created before it starts, destroyed after it ends).
  void* context_ = nullptr;
  void* client_socket_ = nullptr;
  void* manager_socket_ = nullptr;  // connected on the first manager request
  bool watching_ = false;
  std::map<uint64_t, Pending> pending_;

  mutable std::mutex mutex_;  // guards queue_, stopping_, closed_reason_
  std::deque<Outgoing> queue_;
  bool stopping_ = false;
  std::string closed_reason_;

  std::thread thread_;  // last: starts after every member above exists
};

}  // namespace recon::client::detail
