// The daemon's log sink for gpu/log.h: structured journald entries (MESSAGE=, PRIORITY=,
// SYSLOG_IDENTIFIER=recond, plus RECON_* fields such as RECON_CLIENT_PID and RECON_REQUEST_ID)
// when systemd connected our stderr to the journal, readable stderr lines otherwise (foreground
// runs, tests, containers). Request context reaches the sink through ScopedLogFields, so code
// deep in gpu/ logs with the client's pid and request id without knowing about either.
// It must not block on a slow journal beyond one sendmsg, and never throws.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/log.h"
#include "gpu/status.h"

namespace recon::daemon {

// Custom journal fields (systemd.journal-fields(7) rules: A-Z, 0-9, _, no leading _ or digit).
inline constexpr std::string_view kFieldClientPid = "RECON_CLIENT_PID";
inline constexpr std::string_view kFieldClientUid = "RECON_CLIENT_UID";
inline constexpr std::string_view kFieldRequestId = "RECON_REQUEST_ID";
inline constexpr std::string_view kFieldModel = "RECON_MODEL";

struct LogField {
  std::string name;  // sanitised on output: see journal_field_name()
  std::string value;
};

// Adds fields to every message logged by this thread while it lives (nesting appends; inner
// scopes win for a name given twice). Cheap: one vector push and pop.
class ScopedLogFields {
 public:
  explicit ScopedLogFields(std::vector<LogField> fields);
  ~ScopedLogFields();
  ScopedLogFields(const ScopedLogFields&) = delete;
  ScopedLogFields& operator=(const ScopedLogFields&) = delete;

 private:
  size_t previous_size_;
};

// The fields active on this thread (outermost first).
const std::vector<LogField>& current_log_fields();

// One message with extra fields, for the top-level "log once, with context" call sites:
//   log_with_fields(LogLevel::kWarning, "Failed to import region 7 of client 1234: ...",
//                   {{"RECON_CLIENT_PID", "1234"}});
void log_with_fields(LogLevel level, const std::string& message, std::vector<LogField> fields);

enum class LogTarget { kJournal, kStderr };

// kJournal when systemd connected stderr to the journal ($JOURNAL_STREAM names stderr's device
// and inode) and `foreground` is false; kStderr otherwise (a terminal, a pipe, --foreground).
LogTarget detect_log_target(bool foreground);

// Sends one journal entry; each element is one "FIELD=value" (values may hold newlines).
// Returns 0 or a negative errno, like sd_journal_sendv.
using JournalSender = std::function<int(const std::vector<std::string>& fields)>;
// Writes one finished stderr line (it ends in '\n').
using LineWriter = std::function<void(const std::string& line)>;

struct LogSinkOptions {
  LogTarget target = LogTarget::kStderr;
  LogLevel min_level = LogLevel::kInfo;
  std::string identifier = "recond";
  JournalSender journal_sender;  // empty: sd_journal_sendv
  LineWriter stderr_writer;      // empty: fwrite to stderr
  // For the stderr timestamp; empty: the system clock.
  std::function<std::chrono::system_clock::time_point()> clock;
};

// A sink for set_log_sink(). The default sender/writer go to the real journal / stderr.
LogSink make_log_sink(LogSinkOptions options);

// Installs make_log_sink(options) as the process-wide sink and returns the target in use.
LogTarget install_log_sink(bool foreground, LogLevel min_level);

// syslog(3) priority of a level (debug 7, info 6, warning 4, error 3).
int journal_priority(LogLevel level);
// A valid journal field name from `name`: upper-cased, other characters → '_', leading '_' and
// digits dropped, at most 64 characters; "RECON_FIELD" if nothing is left.
std::string journal_field_name(std::string_view name);
// The entry make_log_sink sends: MESSAGE, PRIORITY, SYSLOG_IDENTIFIER, then `fields` (later
// duplicates of a name replace earlier ones).
std::vector<std::string> journal_entry(LogLevel level, const std::string& message, const std::string& identifier,
                                       const std::vector<LogField>& fields);
// "2026-07-21 12:00:00.123 recond warning: <message> [RECON_CLIENT_PID=12 RECON_REQUEST_ID=7]\n"
// (local time; no timestamp when `time` is nullopt).
std::string stderr_line(LogLevel level, const std::string& message, const std::string& identifier,
                        const std::vector<LogField>& fields, std::optional<std::chrono::system_clock::time_point> time);

}  // namespace recon::daemon
