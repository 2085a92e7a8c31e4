// Notifier: sd_notify(3) wrapper. See notify.h.
#include "daemon/service/notify.h"

#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace recon::daemon {
namespace {

std::string with_status(std::string_view first, std::string_view status) {
  std::string message(first);
  if (!status.empty()) message += "\nSTATUS=" + one_line(status);
  return message;
}

}  // namespace

std::string one_line(std::string_view text) {
  std::string line(text);
  for (char& c : line) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return line;
}

Result<std::optional<std::chrono::microseconds>> watchdog_interval_from_environment() {
  uint64_t usec = 0;
  const int r = sd_watchdog_enabled(/*unset_environment=*/0, &usec);
  if (r < 0) {
    const char* value = std::getenv("WATCHDOG_USEC");
    const char* pid = std::getenv("WATCHDOG_PID");
    return invalid_argument(std::string("malformed watchdog environment (WATCHDOG_USEC=") + (value ? value : "") +
                            ", WATCHDOG_PID=" + (pid ? pid : "") + "): " + std::strerror(-r));
  }
  if (r == 0) return std::optional<std::chrono::microseconds>();
  return std::optional<std::chrono::microseconds>(std::chrono::microseconds(usec));
}

Result<Notifier> Notifier::from_environment() {
  RECON_ASSIGN_OR_RETURN(auto interval, watchdog_interval_from_environment());
  return Notifier(interval);
}

bool Notifier::enabled() {
  const char* path = std::getenv("NOTIFY_SOCKET");
  return path != nullptr && path[0] != '\0';
}

Status Notifier::send(const std::string& assignments) const {
  const int r = sd_notify(/*unset_environment=*/0, assignments.c_str());
  if (r < 0) {
    const char* path = std::getenv("NOTIFY_SOCKET");
    return unavailable("sd_notify to " + std::string(path ? path : "?") + " failed: " + std::strerror(-r));
  }
  return Status::ok();
}

Status Notifier::ready(std::string_view status) const {
  return send(with_status("READY=1", status));
}

Status Notifier::status(std::string_view text) const {
  return send("STATUS=" + one_line(text));
}

Status Notifier::extend_timeout(std::chrono::microseconds extension) const {
  const int64_t usec = extension.count() < 1 ? 1 : extension.count();
  return send("EXTEND_TIMEOUT_USEC=" + std::to_string(usec));
}

Status Notifier::watchdog() const {
  return send("WATCHDOG=1");
}

Status Notifier::reloading(std::string_view status) const {
  return send(with_status("RELOADING=1", status));
}

Status Notifier::stopping(std::string_view status) const {
  return send(with_status("STOPPING=1", status));
}

std::optional<std::chrono::microseconds> Notifier::watchdog_ping_interval() const {
  if (!watchdog_interval_) return std::nullopt;
  return std::max(std::chrono::microseconds(1), *watchdog_interval_ / 2);
}

Result<bool> WatchdogPacer::ping_if_due(Clock::time_point now) {
  const auto due = time_until_due(now);
  if (!due || due->count() > 0) return false;
  RECON_RETURN_IF_ERROR(notifier_.watchdog());
  last_ping_ = now;
  return true;
}

std::optional<std::chrono::milliseconds> WatchdogPacer::time_until_due(Clock::time_point now) const {
  const auto interval = notifier_.watchdog_ping_interval();
  if (!interval) return std::nullopt;
  if (!last_ping_) return std::chrono::milliseconds(0);
  const auto elapsed = now - *last_ping_;
  if (elapsed >= *interval) return std::chrono::milliseconds(0);
  // Round down: waking a little early is harmless, late is not.
  return std::chrono::duration_cast<std::chrono::milliseconds>(*interval - elapsed);
}

}  // namespace recon::daemon
