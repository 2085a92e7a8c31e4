// Request envelopes, response verification and error conversion for librecon.
#include "wire.h"

#include <algorithm>
#include <cstdio>

#include "schema/protocol.h"

namespace recon::client::detail {
namespace {

Error unreadable(const std::string& message) {
  return Error(ErrorCode::kInternal, ErrorSource::kConnection, "unreadable answer from the daemon: " + message);
}

template <typename Enum, size_t N>
bool is_known(Enum value, const Enum (&known)[N]) {
  return std::find(std::begin(known), std::end(known), value) != std::end(known);
}

}  // namespace

std::string Id::hex() const {
  char text[33];
  std::snprintf(text, sizeof(text), "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return text;
}

Answer verify_answer(std::vector<uint8_t> bytes, const VerifyLimits& limits) {
  if (bytes.size() > limits.max_bytes) {
    throw Error(ErrorCode::kResourceExhausted, ErrorSource::kConnection,
                "answer of " + std::to_string(bytes.size()) + " bytes exceeds the limit of " +
                    std::to_string(limits.max_bytes));
  }
  if (bytes.size() < 8) throw unreadable(std::to_string(bytes.size()) + " bytes is too short");
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(uint64_t) != 0) {
    throw Error(ErrorCode::kInternal, ErrorSource::kClient, "answer buffer is not 8-byte aligned");
  }
  if (!flatbuffers::BufferHasIdentifier(bytes.data(), wire::ResponseIdentifier())) {
    throw unreadable("not a recon response (file identifier is not RCNA)");
  }
  flatbuffers::Verifier::Options options;
  options.max_depth = limits.max_depth;
  options.max_tables = limits.max_tables;
  options.check_alignment = true;
  flatbuffers::Verifier verifier(bytes.data(), bytes.size(), options);
  if (!wire::VerifyResponseBuffer(verifier)) throw unreadable("FlatBuffers verification failed");
  const wire::Response* response = wire::GetResponse(bytes.data());
  const uint32_t version = response->protocol_version();
  const wire::ResponseBody type = response->body_type();
  if (version == 0) throw unreadable("no protocol_version");
  if (type == wire::ResponseBody::NONE) throw unreadable("no body");
  // A union type set without its table passes the verifier; every body_as_X() below would be null.
  if (response->body() == nullptr && is_known(type, wire::EnumValuesResponseBody())) {
    throw unreadable(std::string("a ") + wire::EnumNameResponseBody(type) + " answer without its body");
  }
  if (type != wire::ResponseBody::Error) {
    if (version < wire::kMinProtocolVersion || version > wire::kProtocolVersion) {
      throw Error(ErrorCode::kUnimplemented, ErrorSource::kConnection,
                  "the daemon answered in protocol version " + std::to_string(version) + "; this librecon speaks " +
                      std::to_string(wire::kMinProtocolVersion) + ".." + std::to_string(wire::kProtocolVersion));
    }
    if (!is_known(type, wire::EnumValuesResponseBody())) {
      throw Error(
          ErrorCode::kUnimplemented, ErrorSource::kConnection,
          "unknown answer type " + std::to_string(static_cast<unsigned>(type)) + " (daemon newer than client?)");
    }
  }
  return Answer{std::move(bytes), response};
}

void finish_request(flatbuffers::FlatBufferBuilder& builder, uint64_t request_id, const Id& session,
                    wire::RequestBody type, flatbuffers::Offset<void> body) {
  wire::RequestBuilder request(builder);
  request.add_protocol_version(wire::kProtocolVersion);
  request.add_request_id(request_id);
  if (!session.is_zero()) {
    const wire::Id128 token = to_wire(session);
    request.add_session(&token);
  }
  request.add_body_type(type);
  request.add_body(body);
  builder.Finish(request.Finish(), wire::RequestIdentifier());
}

Error error_from_wire(const wire::Error* error) {
  auto code = static_cast<uint8_t>(error->code());
  if (code == 0 || code > static_cast<uint8_t>(ErrorCode::kCancelled))
    code = static_cast<uint8_t>(ErrorCode::kInternal);
  const std::string message = error->message() != nullptr ? error->message()->str() : std::string("(no message)");
  return Error(static_cast<ErrorCode>(code), ErrorSource::kDaemon, message, error->retry_after_ms());
}

void expect_body(const Answer& answer, wire::ResponseBody expected, const char* what) {
  const wire::ResponseBody type = answer.response->body_type();
  if (type == wire::ResponseBody::Error) throw error_from_wire(answer.response->body_as_Error());
  if (type != expected) {
    throw Error(ErrorCode::kInternal, ErrorSource::kConnection,
                std::string("the daemon answered ") + what + " with " + wire::EnumNameResponseBody(type) +
                    " instead of " + wire::EnumNameResponseBody(expected));
  }
}

}  // namespace recon::client::detail
