// The client's half of the wire protocol (schema/*.fbs): request envelopes, response
// verification, ids and error conversion. Every received message is copied into private memory
// and verified with explicit limits before anything reads it (the daemon's own rule, mirrored
// from daemon/ipc/message_verify.h, which client/ may not include).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "recon/client/error.h"
#include "schema/request_generated.h"
#include "schema/response_generated.h"

namespace recon::client::detail {

// A 128-bit capability id (region, handle, session).
struct Id {
  uint64_t lo = 0, hi = 0;
  bool is_zero() const { return lo == 0 && hi == 0; }
  bool operator==(const Id&) const = default;
  std::string hex() const;
};
inline wire::Id128 to_wire(const Id& id) {
  return wire::Id128(id.lo, id.hi);
}
inline Id from_wire(const wire::Id128* id) {
  return id == nullptr ? Id{} : Id{id->lo(), id->hi()};
}

// A verified answer: the private copy and the view into it (valid while `bytes` lives, moves
// included: the vector's heap buffer moves with it).
struct Answer {
  std::vector<uint8_t> bytes;
  const wire::Response* response = nullptr;
};

struct VerifyLimits {
  size_t max_bytes = size_t{64} << 20;
  uint32_t max_depth = 16;
  uint32_t max_tables = 100'000;
};
// Side-channel answers are small.
inline constexpr VerifyLimits kSideChannelLimits{64 << 10, 16, 1'000};

// Verifies `bytes` (a private copy, 8-byte aligned): identifier "RCNA", FlatBuffers structure
// under `limits`, protocol version (an Error body is readable at any version), known body.
// Throws Error(kInternal/kUnimplemented, kConnection) when the daemon's answer is unreadable.
Answer verify_answer(std::vector<uint8_t> bytes, const VerifyLimits& limits = {});

// Finishes `builder` as a Request envelope with our protocol version.
void finish_request(flatbuffers::FlatBufferBuilder& builder, uint64_t request_id, const Id& session,
                    wire::RequestBody type, flatbuffers::Offset<void> body);

// The daemon's Error body as an exception (source kDaemon).
Error error_from_wire(const wire::Error* error);
// Throws error_from_wire when the answer is an Error; throws kInternal when its body is not
// `expected`. `what` names the request in messages ("Fetch").
void expect_body(const Answer& answer, wire::ResponseBody expected, const char* what);

}  // namespace recon::client::detail
