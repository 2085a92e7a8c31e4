#include "gpu/log.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace recon {
namespace {

std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}
LogSink& sink() {
  static LogSink s;
  return s;
}

const char* level_name(LogLevel level) {
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

}  // namespace

void set_log_sink(LogSink s) {
  std::lock_guard lock(sink_mutex());
  sink() = std::move(s);
}

void log_message(LogLevel level, const std::string& message) {
  std::lock_guard lock(sink_mutex());
  if (sink()) {
    sink()(level, message);
    return;
  }
  if (level == LogLevel::kDebug && std::getenv("RECON_DEBUG") == nullptr) return;
  std::fprintf(stderr, "recon %s: %s\n", level_name(level), message.c_str());
}

}  // namespace recon
