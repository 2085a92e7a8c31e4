// SignalFd: SIGTERM / SIGINT / SIGHUP as readable events on an fd, for the daemon's event loop
// (epoll / zmq_poll on fd()). Signals are blocked instead of handled, so nothing runs in signal
// context. Open it on the main thread before starting any other thread: threads inherit the
// blocked mask, and a thread that does not block the signals would receive them instead.
// It only reports signals; what SIGHUP or SIGTERM mean is the daemon's decision.
#pragma once

#include <sys/types.h>

#include <csignal>
#include <optional>
#include <vector>

#include "daemon/ipc/unique_fd.h"
#include "gpu/status.h"

namespace recon::daemon {

enum class SignalAction { kShutdown, kReload, kOther };

struct SignalEvent {
  int signal = 0;
  pid_t sender_pid = 0;  // 0 for kernel-generated signals
  uid_t sender_uid = 0;
  SignalAction action() const;  // SIGTERM, SIGINT → kShutdown; SIGHUP → kReload
};

class SignalFd {
 public:
  // Blocks `signals` in the calling thread and opens a non-blocking, close-on-exec signalfd.
  static Result<SignalFd> open(const std::vector<int>& signals = {SIGTERM, SIGINT, SIGHUP});
  SignalFd(SignalFd&& other) noexcept;
  SignalFd& operator=(SignalFd&& other) = delete;
  SignalFd(const SignalFd&) = delete;
  SignalFd& operator=(const SignalFd&) = delete;
  // Closes the fd and unblocks the signals that open() blocked (on the calling thread, which
  // should be the one that opened it). Pending signals are then delivered normally.
  ~SignalFd();

  int fd() const { return fd_.get(); }
  // The next pending signal, or nullopt when none is pending.
  Result<std::optional<SignalEvent>> read();

 private:
  SignalFd(UniqueFd fd, std::vector<int> newly_blocked)
      : fd_(std::move(fd)), newly_blocked_(std::move(newly_blocked)) {}
  UniqueFd fd_;
  std::vector<int> newly_blocked_;  // blocked by us, unblocked again by the destructor
};

// SIGPIPE off for the whole process: a client that disconnects mid-send must surface as EPIPE
// on that one write, not kill the daemon.
Status ignore_sigpipe();

}  // namespace recon::daemon
