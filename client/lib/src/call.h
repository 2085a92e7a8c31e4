// Call: the meeting point of one request's sender (any user thread) and its answers (the I/O
// thread). Most requests have one answer; a streamed one (a job's events) has several, the last
// with Response.final: the owner takes them in order. The I/O thread ends it once, with the final
// answer or a failure; the owner waits on it. An owner that
// stops caring (a dropped PendingResult, a timed-out wait) abandons it; an answer that arrives
// after that is handed to the orphan handler instead (to release a handle nobody will use).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>

#include "recon/client/error.h"
#include "wire.h"

namespace recon::client::detail {

class Call {
 public:
  using OrphanHandler = std::function<void(const Answer&)>;

  explicit Call(OrphanHandler orphan = {}) : orphan_(std::move(orphan)) {}

  // I/O thread. Either hands the answer to a waiter, or (abandoned, or already failed by a
  // timeout) to the orphan handler. A non-final answer leaves the call open for more.
  void complete(Answer answer);
  void fail(Error error);

  // Owner. Blocks until an answer is here (or the failure); returns the next answer in order or
  // throws the failure once every answer before it was taken.
  Answer take();
  bool ready() const;
  bool wait_for(std::chrono::milliseconds timeout) const;
  // Owner gives up: an answer already here, or arriving later, goes to the orphan handler.
  void abandon() noexcept;

  // When the request left and when its answer arrived (both written by the I/O thread before
  // it completes the call, read by the owner after take()).
  std::chrono::steady_clock::time_point sent_at{};
  std::chrono::steady_clock::time_point answered_at{};

 private:
  void run_orphan(const Answer& answer) noexcept;

  mutable std::mutex mutex_;
  mutable std::condition_variable done_cv_;
  bool done_ = false;           // final answer or failure arrived; guarded by mutex_
  bool abandoned_ = false;      // guarded by mutex_
  std::deque<Answer> answers_;  // not yet taken; guarded by mutex_
  std::optional<Error> error_;  // guarded by mutex_
  OrphanHandler orphan_;        // immutable after construction
};

}  // namespace recon::client::detail
