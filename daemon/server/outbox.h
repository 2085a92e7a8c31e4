// Outbox: how GPU workers hand finished answers (and start-up completion) to the I/O thread,
// which alone may touch ZeroMQ sockets; the serving core's AnswerSink. A mutex-guarded list plus an
// eventfd that the I/O thread polls. push() never blocks on the network.
#pragma once

#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "daemon/ipc/unique_fd.h"
#include "daemon/serving/answer_sink.h"
#include "daemon/serving/request_context.h"
#include "gpu/status.h"

namespace recon::daemon {

struct OutgoingReply {
  ReplyTarget target;
  std::vector<uint8_t> bytes;         // a finished Response
  StatusCode code = StatusCode::kOk;  // for the request counters
  bool final = true;                  // false: a streamed partial answer (not counted as a request)
};

// The worker finished loading and warming every configured model (or failed to).
struct StartupDone {
  Status status;
  std::string summary;  // for READY's STATUS= line
  size_t device = 0;
};

using OutboxItem = std::variant<OutgoingReply, StartupDone>;

class Outbox final : public AnswerSink {
 public:
  static Result<Outbox> create();
  Outbox(Outbox&& other) noexcept : event_(std::move(other.event_)), items_(std::move(other.items_)) {}
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  void push(OutboxItem item);
  // AnswerSink: a reply pushed for the I/O thread (errors written as the wire's Error answer).
  void send(const ReplyTarget& target, std::vector<uint8_t> response, bool final) override;
  void send_error(const ReplyTarget& target, const Status& status) override;
  // Everything pushed so far (and resets the eventfd).
  std::vector<OutboxItem> take();
  int fd() const { return event_.get(); }

 private:
  explicit Outbox(UniqueFd event) : event_(std::move(event)) {}
  UniqueFd event_;
  std::mutex mutex_;  // guards items_
  std::vector<OutboxItem> items_;
};

}  // namespace recon::daemon
