// MetricsHttp: the opt-in Prometheus endpoint — plain HTTP/1.x, GET /metrics only, bound to
// 127.0.0.1 (never another interface: there is no authentication), a handful of connections at
// a time, each closed after one answer or 5 s. Non-blocking and driven by the server's poll
// loop (it owns no thread); the text comes from a callback so that it is rendered only when
// asked for.
#pragma once

#include <zmq.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "daemon/ipc/unique_fd.h"
#include "gpu/status.h"

namespace recon::daemon {

class MetricsHttp {
 public:
  // port 0 picks a free port (tests); port() tells which.
  static Result<MetricsHttp> listen(uint16_t port, uint32_t max_connections);
  MetricsHttp() = default;
  MetricsHttp(MetricsHttp&&) = default;
  MetricsHttp& operator=(MetricsHttp&&) = default;

  bool enabled() const { return listener_.valid(); }
  uint16_t port() const { return port_; }

  // Appends the fds to poll (listener first); returns how many it appended.
  size_t add_poll_items(std::vector<zmq_pollitem_t>& items) const;
  // Handles the `count` items it appended, starting at `items`.
  void handle(const zmq_pollitem_t* items, size_t count, const std::function<std::string()>& render);
  // Closes connections older than the timeout.
  void expire(std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

 private:
  struct Connection {
    UniqueFd fd;
    std::string in;
    std::string out;
    size_t sent = 0;
    bool answered = false;
    std::chrono::steady_clock::time_point deadline;
  };
  void accept_all();
  // false: close the connection.
  bool on_readable(Connection& c, const std::function<std::string()>& render);
  bool on_writable(Connection& c);

  UniqueFd listener_;
  uint16_t port_ = 0;
  uint32_t max_connections_ = 8;
  std::vector<Connection> connections_;
};

// The answer to one request head ("GET /metrics HTTP/1.1\r\n..."): status line, headers, body.
std::string http_answer(std::string_view request_head, const std::function<std::string()>& render);

}  // namespace recon::daemon
