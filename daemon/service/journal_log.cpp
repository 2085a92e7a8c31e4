// Journald / stderr log sink. See journal_log.h.
#include "daemon/service/journal_log.h"

#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace recon::daemon {
namespace {

thread_local std::vector<LogField> t_fields;

const char* level_word(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "?";
}

int send_to_journal(const std::vector<std::string>& fields) {
  std::vector<iovec> iov(fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    iov[i].iov_base = const_cast<char*>(fields[i].data());
    iov[i].iov_len = fields[i].size();
  }
  return sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
}

void write_to_stderr(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

bool is_reserved(const std::string& name) {
  return name == "MESSAGE" || name == "PRIORITY" || name == "SYSLOG_IDENTIFIER";
}

// Fields with sanitised names, a later duplicate replacing an earlier one in place.
std::vector<LogField> normalised(const std::vector<LogField>& fields) {
  std::vector<LogField> out;
  for (const LogField& field : fields) {
    std::string name = journal_field_name(field.name);
    if (is_reserved(name)) name.insert(0, "RECON_");
    bool replaced = false;
    for (LogField& existing : out) {
      if (existing.name == name) {
        existing.value = field.value;
        replaced = true;
      }
    }
    if (!replaced) out.push_back({std::move(name), field.value});
  }
  return out;
}

}  // namespace

ScopedLogFields::ScopedLogFields(std::vector<LogField> fields) : previous_size_(t_fields.size()) {
  for (LogField& field : fields) t_fields.push_back(std::move(field));
}

ScopedLogFields::~ScopedLogFields() {
  t_fields.resize(previous_size_);
}

const std::vector<LogField>& current_log_fields() {
  return t_fields;
}

void log_with_fields(LogLevel level, const std::string& message, std::vector<LogField> fields) {
  const ScopedLogFields scope(std::move(fields));
  log_message(level, message);
}

LogTarget detect_log_target(bool foreground) {
  if (foreground) return LogTarget::kStderr;
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr) return LogTarget::kStderr;
  uintmax_t device = 0;
  uintmax_t inode = 0;
  if (std::sscanf(stream, "%" SCNuMAX ":%" SCNuMAX, &device, &inode) != 2) return LogTarget::kStderr;
  struct stat st {};
  if (::fstat(STDERR_FILENO, &st) != 0) return LogTarget::kStderr;
  // Only when stderr itself is that stream: a child of ours whose stderr was redirected inherits
  // the variable too (systemd.exec(5), $JOURNAL_STREAM).
  if (static_cast<uintmax_t>(st.st_dev) != device || static_cast<uintmax_t>(st.st_ino) != inode) {
    return LogTarget::kStderr;
  }
  return LogTarget::kJournal;
}

int journal_priority(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return 7;
    case LogLevel::kInfo:
      return 6;
    case LogLevel::kWarning:
      return 4;
    case LogLevel::kError:
      return 3;
  }
  return 6;
}

std::string journal_field_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    const bool valid = (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!valid) c = '_';
    // A name may not start with '_' (trusted fields) or a digit.
    if (out.empty() && (c == '_' || (c >= '0' && c <= '9'))) continue;
    out.push_back(c);
    if (out.size() == 64) break;
  }
  return out.empty() ? "RECON_FIELD" : out;
}

std::vector<std::string> journal_entry(LogLevel level, const std::string& message, const std::string& identifier,
                                       const std::vector<LogField>& fields) {
  std::vector<std::string> entry;
  entry.reserve(3 + fields.size());
  entry.push_back("MESSAGE=" + message);
  entry.push_back("PRIORITY=" + std::to_string(journal_priority(level)));
  entry.push_back("SYSLOG_IDENTIFIER=" + identifier);
  for (const LogField& field : normalised(fields)) entry.push_back(field.name + "=" + field.value);
  return entry;
}

std::string stderr_line(LogLevel level, const std::string& message, const std::string& identifier,
                        const std::vector<LogField>& fields,
                        std::optional<std::chrono::system_clock::time_point> time) {
  std::string line;
  if (time) {
    const std::time_t seconds = std::chrono::system_clock::to_time_t(*time);
    const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(time->time_since_epoch()).count() % 1000;
    std::tm local{};
    ::localtime_r(&seconds, &local);
    char stamp[40];
    const size_t n = std::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &local);
    std::snprintf(stamp + n, sizeof(stamp) - n, ".%03d ", static_cast<int>(millis < 0 ? millis + 1000 : millis));
    line += stamp;
  }
  line += identifier + " " + level_word(level) + ": " + message;
  const auto clean = normalised(fields);
  if (!clean.empty()) {
    line += " [";
    for (size_t i = 0; i < clean.size(); ++i) line += (i ? " " : "") + clean[i].name + "=" + clean[i].value;
    line += "]";
  }
  // One message, one line: a multi-line message keeps its lines but they stay visibly together.
  for (size_t pos = 0; (pos = line.find('\n', pos)) != std::string::npos; pos += 3) line.replace(pos, 1, "\n  ");
  line += '\n';
  return line;
}

LogSink make_log_sink(LogSinkOptions options) {
  if (!options.journal_sender) options.journal_sender = send_to_journal;
  if (!options.stderr_writer) options.stderr_writer = write_to_stderr;
  if (!options.clock) options.clock = [] { return std::chrono::system_clock::now(); };
  return [options = std::move(options)](LogLevel level, const std::string& message) {
    if (static_cast<int>(level) < static_cast<int>(options.min_level)) return;
    const auto& fields = current_log_fields();
    if (options.target == LogTarget::kJournal) {
      if (options.journal_sender(journal_entry(level, message, options.identifier, fields)) >= 0) return;
      // The journal refused (full socket buffer, journald restarting): stderr still reaches it
      // through the stream systemd connected, without the structured fields.
    }
    options.stderr_writer(stderr_line(level, message, options.identifier, fields, options.clock()));
  };
}

LogTarget install_log_sink(bool foreground, LogLevel min_level) {
  LogSinkOptions options;
  const LogTarget target = detect_log_target(foreground);
  options.target = target;
  options.min_level = min_level;
  set_log_sink(make_log_sink(std::move(options)));
  return target;
}

}  // namespace recon::daemon
