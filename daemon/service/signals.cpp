// SignalFd: signalfd(2)-based signal delivery. See signals.h.
#include "daemon/service/signals.h"

#include <pthread.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace recon::daemon {
SignalAction SignalEvent::action() const {
  switch (signal) {
    case SIGTERM:
    case SIGINT:
      return SignalAction::kShutdown;
    case SIGHUP:
      return SignalAction::kReload;
    default:
      return SignalAction::kOther;
  }
}

Result<SignalFd> SignalFd::open(const std::vector<int>& signals) {
  if (signals.empty()) return invalid_argument("SignalFd needs at least one signal");
  sigset_t wanted;
  sigemptyset(&wanted);
  for (int signal : signals) {
    if (sigaddset(&wanted, signal) != 0) return invalid_argument("not a signal number: " + std::to_string(signal));
  }
  sigset_t previous;
  const int r = ::pthread_sigmask(SIG_BLOCK, &wanted, &previous);
  if (r != 0) return internal_error(errno_text("pthread_sigmask", r));
  std::vector<int> newly_blocked;
  for (int signal : signals) {
    if (sigismember(&previous, signal) == 0) newly_blocked.push_back(signal);
  }
  UniqueFd fd(::signalfd(-1, &wanted, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!fd) {
    const int error = errno;
    sigset_t undo;
    sigemptyset(&undo);
    for (int signal : newly_blocked) sigaddset(&undo, signal);
    ::pthread_sigmask(SIG_UNBLOCK, &undo, nullptr);
    return internal_error(errno_text("signalfd", error));
  }
  return SignalFd(std::move(fd), std::move(newly_blocked));
}

SignalFd::SignalFd(SignalFd&& other) noexcept
    : fd_(std::move(other.fd_)), newly_blocked_(std::move(other.newly_blocked_)) {
  other.newly_blocked_.clear();
}

SignalFd::~SignalFd() {
  fd_.reset();
  if (newly_blocked_.empty()) return;
  sigset_t undo;
  sigemptyset(&undo);
  for (int signal : newly_blocked_) sigaddset(&undo, signal);
  ::pthread_sigmask(SIG_UNBLOCK, &undo, nullptr);
}

Result<std::optional<SignalEvent>> SignalFd::read() {
  signalfd_siginfo info{};
  ssize_t n;
  do {
    n = ::read(fd_.get(), &info, sizeof(info));
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN) return std::optional<SignalEvent>();
    return internal_error(errno_text("reading signalfd"));
  }
  if (n != static_cast<ssize_t>(sizeof(info))) {
    return internal_error("short read from signalfd: " + std::to_string(n) + " bytes");
  }
  SignalEvent event;
  event.signal = static_cast<int>(info.ssi_signo);
  event.sender_pid = static_cast<pid_t>(info.ssi_pid);
  event.sender_uid = static_cast<uid_t>(info.ssi_uid);
  return std::optional<SignalEvent>(event);
}

Status ignore_sigpipe() {
  struct sigaction action {};
  action.sa_handler = SIG_IGN;
  sigemptyset(&action.sa_mask);
  if (::sigaction(SIGPIPE, &action, nullptr) != 0) return internal_error(errno_text("sigaction(SIGPIPE)"));
  return Status::ok();
}

}  // namespace recon::daemon
