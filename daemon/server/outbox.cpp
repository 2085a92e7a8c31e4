// Outbox: see outbox.h.
#include "daemon/server/outbox.h"

#include <sys/eventfd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "daemon/ipc/wire_convert.h"

namespace recon::daemon {

Result<Outbox> Outbox::create() {
  UniqueFd event(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!event) return internal_error(std::string("eventfd: ") + std::strerror(errno));
  return Outbox(std::move(event));
}

void Outbox::push(OutboxItem item) {
  {
    std::lock_guard lock(mutex_);
    items_.push_back(std::move(item));
  }
  const uint64_t one = 1;
  // EAGAIN means the counter is already huge: the I/O thread will wake anyway.
  [[maybe_unused]] const ssize_t n = ::write(event_.get(), &one, sizeof(one));
}

void Outbox::send(const ReplyTarget& target, std::vector<uint8_t> response, bool final) {
  push(OutgoingReply{target, std::move(response), StatusCode::kOk, final});
}

void Outbox::send_error(const ReplyTarget& target, const Status& status) {
  push(OutgoingReply{target, error_response(target.request_id, status), status.code(), true});
}

std::vector<OutboxItem> Outbox::take() {
  uint64_t count = 0;
  [[maybe_unused]] const ssize_t n = ::read(event_.get(), &count, sizeof(count));
  std::lock_guard lock(mutex_);
  return std::exchange(items_, {});
}

}  // namespace recon::daemon
