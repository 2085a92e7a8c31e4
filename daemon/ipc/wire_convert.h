// wire_convert: translations between recon's C++ values (Status, Id128, ImageGeometry) and the
// generated recon::wire types, plus builders for the envelopes every handler ends with.
// It never reads unverified buffers: pass only pointers from message_verify.h.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "daemon/ipc/id128.h"
#include "daemon/ipc/shm_registry.h"
#include "gpu/status.h"
#include "schema/request_generated.h"
#include "schema/response_generated.h"

namespace recon::daemon {

wire::ErrorCode to_wire(StatusCode code);
// Unknown values (a newer peer) and UNKNOWN become kInternal.
StatusCode from_wire(wire::ErrorCode code);

inline wire::Id128 to_wire(const Id128& id) {
  return wire::Id128(id.lo, id.hi);
}
// nullptr (field absent) → the zero id, which names nothing. The bytes are copied, not read as a
// struct in place: an id in a vector of a crafted buffer may be misaligned (message_verify.cpp
// refuses the known case; this keeps any other one defined).
inline Id128 from_wire(const wire::Id128* id) {
  if (id == nullptr) return Id128{};
  uint64_t words[2];
  std::memcpy(words, static_cast<const void*>(id), sizeof(words));
  return Id128{flatbuffers::EndianScalar(words[0]), flatbuffers::EndianScalar(words[1])};
}

// The Status an Error body describes (never OK: a missing code reads as INTERNAL).
Status status_from_wire(const wire::Error* error);

// ImageRef → geometry for ShmRegistry::lease_image. Unknown pixel formats → INVALID_ARGUMENT.
Result<ImageGeometry> image_geometry_from_wire(const wire::ImageRef& ref);

// Finishes `builder` as a Response envelope (protocol v = kProtocolVersion, identifier "RCNA").
void finish_response(flatbuffers::FlatBufferBuilder& builder, uint64_t request_id, wire::ResponseBody type,
                     flatbuffers::Offset<void> body, bool final = true);

// A whole Response carrying `status` (must not be OK) as an Error body.
std::vector<uint8_t> error_response(uint64_t request_id, const Status& status, uint32_t retry_after_ms = 0);

// Finishes `builder` as a Request envelope (protocol v = kProtocolVersion, identifier "RCNQ").
void finish_request(flatbuffers::FlatBufferBuilder& builder, uint64_t request_id, const Id128& session,
                    wire::RequestBody type, flatbuffers::Offset<void> body);

// Copies the finished buffer out of `builder`.
std::vector<uint8_t> to_bytes(const flatbuffers::FlatBufferBuilder& builder);

}  // namespace recon::daemon
