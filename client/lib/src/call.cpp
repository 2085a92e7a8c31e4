// Call: one request's completion state between the I/O thread and its owner.
#include "call.h"

namespace recon::client::detail {

void Call::complete(Answer answer) {
  std::unique_lock lock(mutex_);
  // Nobody waits for it any more (abandoned, or failed earlier: timed out): an answer that still
  // comes goes to the orphan handler, which releases what it holds.
  if (done_ || abandoned_) {
    done_ = done_ || answer.response->final();
    lock.unlock();
    run_orphan(answer);
    return;
  }
  done_ = answer.response->final();
  answers_.push_back(std::move(answer));
  lock.unlock();
  done_cv_.notify_all();
}

void Call::fail(Error error) {
  std::unique_lock lock(mutex_);
  if (done_) return;
  done_ = true;
  error_ = std::move(error);
  lock.unlock();
  done_cv_.notify_all();
}

Answer Call::take() {
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [this] { return !answers_.empty() || done_; });
  if (answers_.empty()) {
    if (error_) throw *error_;
    throw Error(ErrorCode::kInternal, ErrorSource::kClient, "the answer was already taken");
  }
  Answer answer = std::move(answers_.front());
  answers_.pop_front();
  return answer;
}

bool Call::ready() const {
  std::lock_guard lock(mutex_);
  return !answers_.empty() || done_;
}

bool Call::wait_for(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return done_cv_.wait_for(lock, timeout, [this] { return !answers_.empty() || done_; });
}

void Call::abandon() noexcept {
  std::unique_lock lock(mutex_);
  if (abandoned_) return;
  abandoned_ = true;
  std::deque<Answer> untaken;
  untaken.swap(answers_);
  lock.unlock();
  for (const Answer& answer : untaken) run_orphan(answer);
}

void Call::run_orphan(const Answer& answer) noexcept {
  if (!orphan_) return;
  try {
    orphan_(answer);
  } catch (...) {  // releasing is best effort; the I/O thread and abandon() must not throw
  }
}

}  // namespace recon::client::detail
