// reconctl's exit codes (documented in `reconctl --help` and docs/CLIENT.md) and the mapping from
// librecon errors to them. Scripts branch on these, so values never change meaning.
#pragma once

#include "recon/client/error.h"

namespace reconctl {

inline constexpr int kExitOk = 0;
// The daemon answered the request with an error (bad input, unknown model, limit reached, ...).
inline constexpr int kExitRequestFailed = 1;
// The command line is wrong.
inline constexpr int kExitUsage = 2;
// No daemon to talk to: not running, socket missing, not ready (UNAVAILABLE), timed out, or it
// stopped during the request.
inline constexpr int kExitUnavailable = 3;
// The sockets are not accessible to this user, or a management call came from outside the
// manager group.
inline constexpr int kExitPermissionDenied = 4;
// A local file could not be read (input image) or written (outputs).
inline constexpr int kExitLocalFile = 5;

inline int exit_code_for(const recon::client::Error& error) {
  using recon::client::ErrorCode;
  if (error.code() == ErrorCode::kPermissionDenied) return kExitPermissionDenied;
  if (error.daemon_unavailable()) return kExitUnavailable;
  return kExitRequestFailed;
}

}  // namespace reconctl
