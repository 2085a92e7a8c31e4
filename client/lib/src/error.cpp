// recon::client::Error and the names of its enums.
#include "recon/client/error.h"

namespace recon::client {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kUnknown:
      return "UNKNOWN";
    case ErrorCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case ErrorCode::kNotFound:
      return "NOT_FOUND";
    case ErrorCode::kPermissionDenied:
      return "PERMISSION_DENIED";
    case ErrorCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case ErrorCode::kUnavailable:
      return "UNAVAILABLE";
    case ErrorCode::kInternal:
      return "INTERNAL";
    case ErrorCode::kDataLoss:
      return "DATA_LOSS";
    case ErrorCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case ErrorCode::kCancelled:
      return "CANCELLED";
  }
  return "INTERNAL";
}

const char* error_source_name(ErrorSource source) {
  switch (source) {
    case ErrorSource::kDaemon:
      return "daemon";
    case ErrorSource::kConnection:
      return "connection";
    case ErrorSource::kClient:
      return "client";
  }
  return "client";
}

Error::Error(ErrorCode code, ErrorSource source, const std::string& message, uint32_t retry_after_ms)
    : std::runtime_error(std::string(error_code_name(code)) + ": " + message),
      code_(code),
      source_(source),
      message_(message),
      retry_after_ms_(retry_after_ms) {}

}  // namespace recon::client
