// message_verify: the only way a received FlatBuffer becomes a typed recon::wire object.
//
// Rule for callers (daemon and client): verify a PRIVATE COPY. Copy each ZeroMQ frame (and each
// side-channel packet) into memory only this process can write, e.g. a std::vector<uint8_t>,
// then verify that copy and read only from it. Never verify or read a message in memory a peer
// can still write (a shared-memory region, a zero-copy frame): it can change between the check
// and the use, and the verifier's guarantees are gone. The copy also gives the 8-byte alignment
// the FlatBuffers accessors need (zmq_msg_data of a small frame is not aligned).
//
// The returned pointer points INTO the copy: it is valid only while the copy lives, unchanged.
// Verification proves offsets and sizes are in bounds; it does not judge values (image sizes,
// region ids, tensor names): the handlers check those.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "gpu/status.h"
#include "schema/request_generated.h"
#include "schema/response_generated.h"

namespace recon::daemon {

// Bounds of one message, tightened well below the FlatBuffers defaults (64 levels, 10^6 tables,
// 2 GiB). The schema has no recursive type, so depth is bounded statically: the verifier counts
// 4 levels for the deepest messages (Request → InferBatch → Image → InlineImage; Response →
// StatusReport → DeviceStatus → PoolStats; a test pins this); max_depth = 16 guards against a
// future schema mistake. max_tables bounds the verifier's work for a buffer whose
// offsets all point at one small table (N offsets cost 4N bytes but N table verifications).
struct VerifyLimits {
  size_t max_bytes = size_t{64} << 20;  // keep equal to ZMQ_MAXMSGSIZE
  uint32_t max_depth = 16;
  uint32_t max_tables = 100'000;
};

// Side-channel packets carry no images: a much smaller budget.
inline constexpr VerifyLimits kSideChannelLimits{64 << 10, 16, 1'000};

// Checks size, alignment, file identifier "RCNQ", the FlatBuffers structure under `limits`,
// protocol_version (0 → INVALID_ARGUMENT; outside [kMinProtocolVersion, kProtocolVersion] →
// UNIMPLEMENTED) and the body type (NONE → INVALID_ARGUMENT; a type this build does not know →
// UNIMPLEMENTED), then that every field the verb needs is present (required_fields.h: a union type
// set without its table, an absent id → INVALID_ARGUMENT naming the field). Oversize →
// RESOURCE_EXHAUSTED. Everything else malformed → INVALID_ARGUMENT.
// `request_id`, when given, receives the request's id as soon as the buffer's structure has
// verified (0 before that): an answer to a request refused for its version, body or fields can
// then name the request, which the client is waiting for.
Result<const wire::Request*> verify_request(std::span<const uint8_t> private_copy, const VerifyLimits& limits = {},
                                            uint64_t* request_id = nullptr);

// The client's side: identifier "RCNA", same structure checks. An Error body is accepted at any
// protocol version (a daemon that refuses our version still explains why); other bodies need a
// version in [kMinProtocolVersion, kProtocolVersion]. A known body type without its table →
// INVALID_ARGUMENT.
Result<const wire::Response*> verify_response(std::span<const uint8_t> private_copy, const VerifyLimits& limits = {});

// A private copy of a received frame together with the verified view into it: what the server
// should hold instead of a bare pointer, so that the copy cannot be forgotten or outlived.
// Moving it keeps the view valid (the vector's heap buffer moves with it).
template <typename Message>
class Verified {
 public:
  const Message* operator->() const { return message_; }
  const Message& operator*() const { return *message_; }
  const Message* get() const { return message_; }
  std::span<const uint8_t> bytes() const { return bytes_; }

 private:
  friend Result<Verified<wire::Request>> copy_and_verify_request(std::span<const uint8_t>, const VerifyLimits&,
                                                                 uint64_t*);
  friend Result<Verified<wire::Response>> copy_and_verify_response(std::span<const uint8_t>, const VerifyLimits&);
  Verified(std::vector<uint8_t> bytes, const Message* message) : bytes_(std::move(bytes)), message_(message) {}

  std::vector<uint8_t> bytes_;
  const Message* message_ = nullptr;
};

// Copies `frame` (e.g. zmq_msg_data of a received frame, any alignment) into private memory,
// after refusing oversize frames without copying them, then verifies the copy.
Result<Verified<wire::Request>> copy_and_verify_request(std::span<const uint8_t> frame, const VerifyLimits& limits = {},
                                                        uint64_t* request_id = nullptr);
Result<Verified<wire::Response>> copy_and_verify_response(std::span<const uint8_t> frame,
                                                          const VerifyLimits& limits = {});

}  // namespace recon::daemon
