// MetricsHttp: see metrics_http.h.
#include "daemon/server/metrics_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace recon::daemon {
namespace {

constexpr size_t kMaxRequestHead = 8192;
constexpr auto kConnectionTimeout = std::chrono::seconds(5);

std::string response(const char* status, const std::string& content_type, const std::string& body) {
  return std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace

std::string http_answer(std::string_view head, const std::function<std::string()>& render) {
  const size_t line_end = head.find("\r\n");
  const std::string_view line = head.substr(0, line_end);
  const size_t first = line.find(' ');
  const size_t second = first == std::string_view::npos ? first : line.find(' ', first + 1);
  if (second == std::string_view::npos) return response("400 Bad Request", "text/plain", "bad request\n");
  const std::string_view method = line.substr(0, first);
  std::string_view target = line.substr(first + 1, second - first - 1);
  if (const size_t query = target.find('?'); query != std::string_view::npos) target = target.substr(0, query);
  if (method != "GET" && method != "HEAD") {
    return response("405 Method Not Allowed", "text/plain", "only GET /metrics\n");
  }
  if (target != "/metrics") return response("404 Not Found", "text/plain", "only GET /metrics\n");
  std::string answer = response("200 OK", "text/plain; version=0.0.4; charset=utf-8", render());
  if (method == "HEAD") answer.resize(answer.find("\r\n\r\n") + 4);
  return answer;
}

Result<MetricsHttp> MetricsHttp::listen(uint16_t port, uint32_t max_connections) {
  MetricsHttp http;
  http.listener_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!http.listener_) return unavailable(std::string("metrics socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(http.listener_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // local scrapers only
  if (::bind(http.listener_.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    return unavailable("binding metrics port 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(errno));
  }
  if (::listen(http.listener_.get(), 16) != 0) return unavailable(std::string("listen: ") + std::strerror(errno));
  socklen_t length = sizeof(address);
  ::getsockname(http.listener_.get(), reinterpret_cast<sockaddr*>(&address), &length);
  http.port_ = ntohs(address.sin_port);
  http.max_connections_ = max_connections;
  return http;
}

size_t MetricsHttp::add_poll_items(std::vector<zmq_pollitem_t>& items) const {
  if (!enabled()) return 0;
  items.push_back(zmq_pollitem_t{nullptr, listener_.get(), ZMQ_POLLIN, 0});
  for (const Connection& c : connections_) {
    items.push_back(zmq_pollitem_t{nullptr, c.fd.get(), static_cast<short>(c.answered ? ZMQ_POLLOUT : ZMQ_POLLIN), 0});
  }
  return 1 + connections_.size();
}

void MetricsHttp::handle(const zmq_pollitem_t* items, size_t count, const std::function<std::string()>& render) {
  if (count == 0) return;
  // Connections first (their indices match connections_ until accept_all appends).
  std::vector<bool> keep(connections_.size(), true);
  for (size_t i = 1; i < count && i - 1 < connections_.size(); ++i) {
    Connection& c = connections_[i - 1];
    if (items[i].revents & (ZMQ_POLLERR)) {
      keep[i - 1] = false;
    } else if (items[i].revents & ZMQ_POLLIN) {
      keep[i - 1] = on_readable(c, render);
    } else if (items[i].revents & ZMQ_POLLOUT) {
      keep[i - 1] = on_writable(c);
    }
  }
  std::vector<Connection> alive;
  for (size_t i = 0; i < connections_.size(); ++i) {
    if (keep[i]) alive.push_back(std::move(connections_[i]));
  }
  connections_ = std::move(alive);
  if (items[0].revents & ZMQ_POLLIN) accept_all();
}

void MetricsHttp::accept_all() {
  while (true) {
    UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) return;
    if (connections_.size() >= max_connections_) continue;  // closed at once: scrapers retry
    Connection c;
    c.fd = std::move(fd);
    c.deadline = std::chrono::steady_clock::now() + kConnectionTimeout;
    connections_.push_back(std::move(c));
  }
}

bool MetricsHttp::on_readable(Connection& c, const std::function<std::string()>& render) {
  char buffer[2048];
  const ssize_t n = ::recv(c.fd.get(), buffer, sizeof(buffer), 0);
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  if (n == 0) return false;
  c.in.append(buffer, static_cast<size_t>(n));
  const size_t end = c.in.find("\r\n\r\n");
  if (end == std::string::npos) {
    if (c.in.size() > kMaxRequestHead) {
      c.out = response("431 Request Header Fields Too Large", "text/plain", "request head too large\n");
      c.answered = true;
      return on_writable(c);
    }
    return true;
  }
  c.out = http_answer(std::string_view(c.in).substr(0, end), render);
  c.answered = true;
  return on_writable(c);
}

bool MetricsHttp::on_writable(Connection& c) {
  while (c.sent < c.out.size()) {
    const ssize_t n = ::send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    c.sent += static_cast<size_t>(n);
  }
  return false;  // all sent: close
}

void MetricsHttp::expire(std::chrono::steady_clock::time_point now) {
  std::erase_if(connections_, [&](const Connection& c) { return now > c.deadline; });
}

}  // namespace recon::daemon
