// RequestPump: the I/O thread that owns librecon's ZeroMQ sockets.
#include "request_pump.h"

#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace recon::client::detail {
namespace {

constexpr int kMaxPollMs = 1000;
// A request that timed out stays known this long, so that its late answer can still be
// released (a result handle would otherwise live until its TTL).
constexpr auto kLateAnswerGrace = std::chrono::minutes(10);
// Answers larger than this are dropped by ZeroMQ (keep >= the daemon's largest answer).
constexpr int64_t kMaxAnswerBytes = int64_t{256} << 20;

Error connection_error(const std::string& message) {
  return Error(ErrorCode::kUnavailable, ErrorSource::kConnection, message);
}

void* new_dealer(void* context, const std::string& endpoint) {
  void* socket = zmq_socket(context, ZMQ_DEALER);
  if (socket == nullptr) return nullptr;
  const int linger = 0;  // never block close on unsent requests: the daemon is gone or we are
  zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof(linger));
  const int64_t max_size = kMaxAnswerBytes;
  zmq_setsockopt(socket, ZMQ_MAXMSGSIZE, &max_size, sizeof(max_size));
  const int hwm = 100'000;  // a bench may have many requests in flight; the daemon bounds its queue
  zmq_setsockopt(socket, ZMQ_SNDHWM, &hwm, sizeof(hwm));
  zmq_setsockopt(socket, ZMQ_RCVHWM, &hwm, sizeof(hwm));
  if (zmq_connect(socket, endpoint.c_str()) != 0) {
    zmq_close(socket);
    return nullptr;
  }
  return socket;
}

}  // namespace

RequestPump::RequestPump(std::string client_endpoint, std::string manager_endpoint, int watch_fd)
    : client_endpoint_(std::move(client_endpoint)),
      manager_endpoint_(std::move(manager_endpoint)),
      watch_fd_(watch_fd) {
  wake_ = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_) throw Error(ErrorCode::kInternal, ErrorSource::kClient, std::string("eventfd: ") + std::strerror(errno));
  context_ = zmq_ctx_new();
  if (context_ == nullptr) throw Error(ErrorCode::kInternal, ErrorSource::kClient, "zmq_ctx_new failed");
  client_socket_ = new_dealer(context_, client_endpoint_);
  if (client_socket_ == nullptr) {
    const std::string why = zmq_strerror(zmq_errno());
    zmq_ctx_term(context_);
    throw Error(ErrorCode::kInvalidArgument, ErrorSource::kClient,
                "cannot connect a ZeroMQ socket to " + client_endpoint_ + ": " + why);
  }
  watching_ = watch_fd_ >= 0;
  thread_ = std::thread([this] { run(); });
}

RequestPump::~RequestPump() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof(one));
  thread_.join();
  close_all("the client was closed");
  if (client_socket_ != nullptr) zmq_close(client_socket_);
  if (manager_socket_ != nullptr) zmq_close(manager_socket_);
  zmq_ctx_term(context_);
}

void RequestPump::send(Target target, uint64_t request_id, std::vector<uint8_t> bytes, std::shared_ptr<Call> call,
                       std::chrono::milliseconds timeout) {
  {
    std::lock_guard lock(mutex_);
    if (!closed_reason_.empty() || stopping_) {
      const std::string reason = closed_reason_.empty() ? "the client is closing" : closed_reason_;
      if (call) call->fail(connection_error(reason));
      return;
    }
    queue_.push_back(Outgoing{target, request_id, std::move(bytes), std::move(call), timeout});
  }
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof(one));
}

std::string RequestPump::closed_reason() const {
  std::lock_guard lock(mutex_);
  return closed_reason_;
}

void* RequestPump::socket_for(Target target) {
  if (target == Target::kClient) return client_socket_;
  if (manager_socket_ == nullptr) manager_socket_ = new_dealer(context_, manager_endpoint_);
  return manager_socket_;
}

void RequestPump::run() {
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
    }
    zmq_pollitem_t items[4];
    int count = 0;
    items[count++] = {nullptr, wake_.get(), ZMQ_POLLIN, 0};
    items[count++] = {client_socket_, 0, ZMQ_POLLIN, 0};
    const int manager_index = manager_socket_ != nullptr ? count : -1;
    if (manager_socket_ != nullptr) items[count++] = {manager_socket_, 0, ZMQ_POLLIN, 0};
    // No events asked: poll(2) still reports POLLHUP/POLLERR, which zmq_poll turns into ZMQ_POLLERR.
    const int watch_index = watching_ ? count : -1;
    if (watching_) items[count++] = {nullptr, watch_fd_, 0, 0};

    const int ready = zmq_poll(items, count, poll_timeout_ms(std::chrono::steady_clock::now()));
    if (ready < 0 && zmq_errno() != EINTR) {
      close_all(std::string("zmq_poll failed: ") + zmq_strerror(zmq_errno()));
      return;
    }
    if (ready > 0) {
      if ((items[0].revents & ZMQ_POLLIN) != 0) {
        uint64_t value;
        (void)!::read(wake_.get(), &value, sizeof(value));
        send_queued();
      }
      if ((items[1].revents & ZMQ_POLLIN) != 0) receive_all(client_socket_);
      if (manager_index >= 0 && (items[manager_index].revents & ZMQ_POLLIN) != 0) receive_all(manager_socket_);
      if (watch_index >= 0 && (items[watch_index].revents & ZMQ_POLLERR) != 0) {
        watching_ = false;
        close_all("recond closed the session (it stopped or restarted); connect again");
      }
    }
    // Timeouts; the poll items are rebuilt each turn, so a manager socket that send_queued()
    // has just connected is polled from the next turn on.
    expire(std::chrono::steady_clock::now());
  }
}

void RequestPump::send_queued() {
  std::deque<Outgoing> batch;
  {
    std::lock_guard lock(mutex_);
    batch.swap(queue_);
  }
  const auto now = std::chrono::steady_clock::now();
  for (Outgoing& out : batch) {
    void* socket = socket_for(out.target);
    if (socket == nullptr) {
      if (out.call) {
        out.call->fail(Error(ErrorCode::kInvalidArgument, ErrorSource::kClient,
                             "cannot connect a ZeroMQ socket to " + manager_endpoint_));
      }
      continue;
    }
    // A signal the application handles may land on this thread: an interrupted send queued nothing.
    int sent;
    do {
      sent = zmq_send(socket, out.bytes.data(), out.bytes.size(), ZMQ_DONTWAIT);
    } while (sent < 0 && zmq_errno() == EINTR);
    if (sent < 0) {
      if (out.call) {
        out.call->fail(
            connection_error(std::string("cannot queue the request for recond: ") + zmq_strerror(zmq_errno())));
      }
      continue;
    }
    if (out.call) out.call->sent_at = now;
    Pending pending{std::move(out.call), std::chrono::steady_clock::time_point::max(), out.timeout};
    if (out.timeout.count() > 0) pending.deadline = now + out.timeout;
    pending_[out.request_id] = std::move(pending);
  }
}

void RequestPump::receive_all(void* socket) {
  for (;;) {
    // One answer = one or more frames; the FlatBuffer is the last (a ROUTER may keep an empty
    // delimiter in front of it).
    std::vector<uint8_t> payload;
    bool more = true;
    bool got_any = false;
    while (more) {
      zmq_msg_t frame;
      zmq_msg_init(&frame);
      if (zmq_msg_recv(&frame, socket, got_any ? 0 : ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&frame);
        if (!got_any) return;  // EAGAIN: nothing more queued
        break;
      }
      got_any = true;
      const auto* data = static_cast<const uint8_t*>(zmq_msg_data(&frame));
      payload.assign(data, data + zmq_msg_size(&frame));  // private copy, aligned by operator new
      more = zmq_msg_more(&frame) != 0;
      zmq_msg_close(&frame);
    }
    if (!payload.empty()) handle_frame(std::move(payload));
  }
}

void RequestPump::handle_frame(std::vector<uint8_t> payload) {
  Answer answer;
  try {
    answer = verify_answer(std::move(payload));
  } catch (const Error&) {
    return;  // unreadable: its request id cannot be trusted; that request runs into its timeout
  }
  const auto it = pending_.find(answer.response->request_id());
  if (it == pending_.end()) return;  // fire-and-forget answered after expiry, or a stray
  std::shared_ptr<Call> call = it->second.call;
  if (answer.response->final()) {
    pending_.erase(it);
  } else if (it->second.timeout.count() > 0 && !it->second.late) {
    // A stream (a job's events): the timeout bounds the silence between answers, not the whole.
    it->second.deadline = std::chrono::steady_clock::now() + it->second.timeout;
  }
  if (call) {
    call->answered_at = std::chrono::steady_clock::now();
    call->complete(std::move(answer));
  }
}

void RequestPump::expire(std::chrono::steady_clock::time_point now) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    Pending& p = it->second;
    if (p.deadline > now) {
      ++it;
      continue;
    }
    if (p.late || !p.call) {
      it = pending_.erase(it);
      continue;
    }
    p.call->fail(connection_error("no answer from recond within " + std::to_string(p.timeout.count()) +
                                  " ms (the request's timeout)"));
    p.late = true;
    p.deadline = now + kLateAnswerGrace;
    ++it;
  }
}

int RequestPump::poll_timeout_ms(std::chrono::steady_clock::time_point now) const {
  auto earliest = std::chrono::steady_clock::time_point::max();
  for (const auto& [id, p] : pending_) earliest = std::min(earliest, p.deadline);
  if (earliest == std::chrono::steady_clock::time_point::max()) return kMaxPollMs;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(earliest - now).count() + 1;
  return static_cast<int>(std::clamp<int64_t>(left, 0, kMaxPollMs));
}

void RequestPump::close_all(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (closed_reason_.empty()) closed_reason_ = reason;
    for (Outgoing& out : queue_) {
      if (out.call) out.call->fail(connection_error(reason));
    }
    queue_.clear();
  }
  for (auto& [id, p] : pending_) {
    if (p.call) p.call->fail(connection_error(reason));
  }
  pending_.clear();
}

}  // namespace recon::client::detail
