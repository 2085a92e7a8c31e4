// Minimal logging used by the GPU library. The daemon installs a sink that forwards to
// journald; tools and tests get stderr. The library never decides where logs go.
#pragma once

#include <functional>
#include <string>

namespace recon {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

using LogSink = std::function<void(LogLevel, const std::string& message)>;

// Replaces the process-wide sink (thread-safe). An empty sink restores stderr.
void set_log_sink(LogSink sink);
void log_message(LogLevel level, const std::string& message);

inline void log_info(const std::string& m) {
  log_message(LogLevel::kInfo, m);
}
inline void log_warning(const std::string& m) {
  log_message(LogLevel::kWarning, m);
}
inline void log_error(const std::string& m) {
  log_message(LogLevel::kError, m);
}

}  // namespace recon
