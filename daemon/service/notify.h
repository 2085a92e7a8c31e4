// Notifier: recond's messages to systemd (sd_notify): READY=1 after warm-up, STATUS= progress
// lines, EXTEND_TIMEOUT_USEC= while compiling pipelines, WATCHDOG=1 from the scheduler loop,
// RELOADING=1 / STOPPING=1. Every call is a no-op when $NOTIFY_SOCKET is unset (foreground runs,
// tests). It decides nothing about *when* to send: the daemon's loops do; WatchdogPacer only
// says whether a ping is due. It never logs: failures come back as Status.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "gpu/status.h"

namespace recon::daemon {

// The watchdog interval systemd expects ($WATCHDOG_USEC, honoured only when $WATCHDOG_PID is
// unset or names this process), or nullopt when the watchdog is off. A malformed value is an
// error rather than "off", so that a broken environment is noticed.
Result<std::optional<std::chrono::microseconds>> watchdog_interval_from_environment();

class Notifier {
 public:
  // Reads the watchdog settings once; $NOTIFY_SOCKET is read by every send (so tests may set it).
  static Result<Notifier> from_environment();
  // For tests and callers that know the interval.
  explicit Notifier(std::optional<std::chrono::microseconds> watchdog_interval = std::nullopt)
      : watchdog_interval_(watchdog_interval) {}

  // Whether $NOTIFY_SOCKET is set, i.e. whether anything is listening for our messages.
  static bool enabled();

  // "READY=1" (and "STATUS=<status>" in the same datagram when status is not empty).
  Status ready(std::string_view status = {}) const;
  // "STATUS=<text>": one line; newlines and other control characters become spaces.
  Status status(std::string_view text) const;
  // "EXTEND_TIMEOUT_USEC=<n>": the start (or stop) timeout ends `extension` from now, unless
  // extended again. Send one before every step that may take long; each must arrive before the
  // previous deadline. Sub-microsecond parts are rounded up; zero is raised to one microsecond.
  Status extend_timeout(std::chrono::microseconds extension) const;
  // "WATCHDOG=1". Send it from the loop whose progress it certifies.
  Status watchdog() const;
  // "RELOADING=1" (STATUS= too when given); send ready() again when the reload is done.
  Status reloading(std::string_view status = {}) const;
  // "STOPPING=1" (STATUS= too when given).
  Status stopping(std::string_view status = {}) const;
  // Any assignment list ("KEY=VALUE\n..."), sent as one datagram.
  Status send(const std::string& assignments) const;

  // The interval systemd enforces, and the one to ping at (half of it, as sd_watchdog_enabled(3)
  // recommends); nullopt when the watchdog is off.
  std::optional<std::chrono::microseconds> watchdog_interval() const { return watchdog_interval_; }
  std::optional<std::chrono::microseconds> watchdog_ping_interval() const;

 private:
  std::optional<std::chrono::microseconds> watchdog_interval_;
};

// Rate-limits watchdog pings for one loop: ping_if_due() sends WATCHDOG=1 when at least half
// the watchdog interval has passed since the last ping (the first call always pings).
// Not thread-safe: one pacer per loop, used only from that loop's thread. The notifier must
// outlive the pacer.
class WatchdogPacer {
 public:
  using Clock = std::chrono::steady_clock;
  explicit WatchdogPacer(const Notifier& notifier) : notifier_(notifier) {}

  // True when a ping was sent. A no-op (false) when the watchdog is off.
  Result<bool> ping_if_due(Clock::time_point now = Clock::now());
  // How long the loop may sleep before the next ping is due (for its poll timeout); nullopt when
  // the watchdog is off, zero when a ping is due now.
  std::optional<std::chrono::milliseconds> time_until_due(Clock::time_point now = Clock::now()) const;

 private:
  const Notifier& notifier_;
  std::optional<Clock::time_point> last_ping_;
};

// The single line STATUS= carries: control characters (newlines included) become spaces.
std::string one_line(std::string_view text);

}  // namespace recon::daemon
