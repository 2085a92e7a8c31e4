// recon::client::Error: the one exception type librecon throws, carrying the daemon's error code.
//
// Error policy of librecon: every fallible call throws recon::client::Error (never anything else,
// except std::bad_alloc); destructors and release paths never throw. An Error says what failed
// (code(), the wire protocol's ErrorCode values), who said so (source(): the daemon answered with
// an error, the connection failed, or the library refused the call before sending it) and, for
// RESOURCE_EXHAUSTED and UNAVAILABLE, when a retry may help (retry_after()).
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "recon/client/export.h"

namespace recon::client {

// Same numbers as recon.wire.ErrorCode (schema/common.fbs); a code this library does not know
// becomes kInternal.
enum class ErrorCode : uint8_t {
  kUnknown = 0,
  kInvalidArgument = 1,
  kNotFound = 2,
  kPermissionDenied = 3,
  kResourceExhausted = 4,
  kUnavailable = 5,
  kInternal = 6,
  kDataLoss = 7,
  kUnimplemented = 8,
  kCancelled = 9,
};

// "INVALID_ARGUMENT", "UNAVAILABLE", ... (the schema's spelling).
RECON_CLIENT_API const char* error_code_name(ErrorCode code);

enum class ErrorSource : uint8_t {
  kDaemon,      // the daemon answered the request with an Error
  kConnection,  // no answer: cannot connect, timed out, or the daemon went away
  kClient,      // refused by the library before anything was sent (bad argument, closed client)
};

RECON_CLIENT_API const char* error_source_name(ErrorSource source);

class RECON_CLIENT_API Error : public std::runtime_error {
 public:
  Error(ErrorCode code, ErrorSource source, const std::string& message, uint32_t retry_after_ms = 0);

  ErrorCode code() const noexcept { return code_; }
  ErrorSource source() const noexcept { return source_; }
  // The text without the "CODE: " prefix that what() carries.
  const std::string& message() const noexcept { return message_; }
  // Hint from the daemon for RESOURCE_EXHAUSTED / UNAVAILABLE; 0 when none.
  std::chrono::milliseconds retry_after() const noexcept { return std::chrono::milliseconds(retry_after_ms_); }
  // True when the daemon cannot serve at all: no connection, or it answered UNAVAILABLE.
  bool daemon_unavailable() const noexcept {
    return source_ == ErrorSource::kConnection || code_ == ErrorCode::kUnavailable;
  }

 private:
  ErrorCode code_;
  ErrorSource source_;
  std::string message_;
  uint32_t retry_after_ms_;
};

}  // namespace recon::client
