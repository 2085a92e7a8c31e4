// Status and Result<T>: the error values every fallible recon call returns.
// Expected failures (bad input, exhausted limits, driver errors) travel as values with a code
// and a human message; impossible states are bugs and abort loudly instead.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace recon {

// One short enum shared by the GPU library, the daemon and the wire protocol's error codes.
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kPermissionDenied,
  kResourceExhausted,
  kUnavailable,
  kInternal,
  kDataLoss,       // corrupt or truncated files
  kUnimplemented,  // a feature the device or build lacks
  kCancelled,      // the client cancelled it
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "RESOURCE_EXHAUSTED: activation pool cap of 64 MiB reached"
  std::string to_string() const;

  // Prepends context, keeping the code: "loading weights: " + message.
  Status with_context(const std::string& context) const {
    if (is_ok()) return *this;
    return {code_, context + ": " + message_};
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// "what: <strerror(error)>", the message of a failed system call.
std::string errno_text(std::string_view what, int error = errno);

inline Status invalid_argument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status not_found(std::string m) {
  return {StatusCode::kNotFound, std::move(m)};
}
inline Status permission_denied(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}
inline Status resource_exhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status unavailable(std::string m) {
  return {StatusCode::kUnavailable, std::move(m)};
}
inline Status internal_error(std::string m) {
  return {StatusCode::kInternal, std::move(m)};
}
inline Status data_loss(std::string m) {
  return {StatusCode::kDataLoss, std::move(m)};
}
inline Status unimplemented(std::string m) {
  return {StatusCode::kUnimplemented, std::move(m)};
}
inline Status cancelled(std::string m) {
  return {StatusCode::kCancelled, std::move(m)};
}

// A value or the Status saying why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).is_ok()) {
      std::fprintf(stderr, "recon: Result constructed from an OK status\n");
      std::abort();
    }
  }

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }

  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(v_);
  }

  T& value() & { return checked(); }
  const T& value() const& { return const_cast<Result*>(this)->checked(); }
  T&& value() && { return std::move(checked()); }
  T* operator->() { return &checked(); }
  const T* operator->() const { return &const_cast<Result*>(this)->checked(); }
  T& operator*() & { return checked(); }

 private:
  T& checked() {
    if (!is_ok()) {
      std::fprintf(stderr, "recon: value() of a failed Result: %s\n", std::get<Status>(v_).to_string().c_str());
      std::abort();
    }
    return std::get<T>(v_);
  }
  std::variant<T, Status> v_;
};

}  // namespace recon

// Returns early from a Status-returning function when `expr` fails.
#define RECON_RETURN_IF_ERROR(expr)                   \
  do {                                                \
    ::recon::Status recon_status_ = (expr);           \
    if (!recon_status_.is_ok()) return recon_status_; \
  } while (0)

#define RECON_CONCAT_INNER_(a, b) a##b
#define RECON_CONCAT_(a, b) RECON_CONCAT_INNER_(a, b)
// `RECON_ASSIGN_OR_RETURN(auto x, make_x());` binds the value or returns the failure.
#define RECON_ASSIGN_OR_RETURN(decl, expr) \
  RECON_ASSIGN_OR_RETURN_IMPL_(RECON_CONCAT_(recon_result_, __LINE__), decl, expr)
#define RECON_ASSIGN_OR_RETURN_IMPL_(tmp, decl, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.is_ok()) return tmp.status();              \
  decl = std::move(tmp).value()
