// Id128: the 128-bit random identifiers of the protocol (region ids, result handles, session
// tokens) on the C++ side. They are capabilities, so they come only from the kernel CSPRNG and
// are compared in full; this file does not know the wire format (see wire_convert.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "gpu/status.h"

namespace recon::daemon {

struct Id128 {
  uint64_t lo = 0;
  uint64_t hi = 0;

  bool is_zero() const { return lo == 0 && hi == 0; }
  friend bool operator==(const Id128&, const Id128&) = default;

  // 32 lower-case hex digits, hi first; for logs.
  std::string to_string() const;

  // 16 bytes from getrandom(2); never zero. Fails only if the kernel has no entropy source.
  static Result<Id128> random();
};

struct Id128Hash {
  size_t operator()(const Id128& id) const noexcept {
    // The bits are uniformly random already.
    return static_cast<size_t>(id.lo ^ (id.hi * 0x9e3779b97f4a7c15ULL));
  }
};

}  // namespace recon::daemon
