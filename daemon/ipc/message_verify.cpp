// message_verify: FlatBuffers verification with explicit limits, plus envelope checks.
#include "daemon/ipc/message_verify.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "daemon/ipc/required_fields.h"
#include "schema/protocol.h"

namespace recon::daemon {
namespace {

// Smallest well-formed buffer: root offset (4) + file identifier (4).
constexpr size_t kMinMessageBytes = 8;

std::string identifier_text(std::span<const uint8_t> bytes) {
  std::string text;
  for (size_t i = 4; i < 8; ++i) {
    const uint8_t c = bytes[i];
    if (c >= 0x20 && c < 0x7f) {
      text += static_cast<char>(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      text += hex;
    }
  }
  return text;
}

// Size, alignment and identifier: the checks shared by requests and responses.
Status check_frame(std::span<const uint8_t> bytes, const VerifyLimits& limits, const char* what,
                   const char* identifier) {
  const size_t max_bytes = std::min<size_t>(limits.max_bytes, FLATBUFFERS_MAX_BUFFER_SIZE - 1);
  if (bytes.size() > max_bytes) {
    return resource_exhausted(std::string(what) + " of " + std::to_string(bytes.size()) +
                              " bytes exceeds the limit of " + std::to_string(max_bytes));
  }
  if (bytes.size() < kMinMessageBytes) {
    return invalid_argument(std::string(what) + " of " + std::to_string(bytes.size()) +
                            " bytes is too short to be a FlatBuffer");
  }
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(uint64_t) != 0) {
    // Not the peer's fault: the caller skipped the private (aligned) copy.
    return internal_error(std::string(what) + " buffer is not 8-byte aligned (verify a private copy)");
  }
  if (!flatbuffers::BufferHasIdentifier(bytes.data(), identifier)) {
    return invalid_argument(std::string("not a recon ") + what + ": file identifier '" + identifier_text(bytes) +
                            "', expected '" + identifier + "'");
  }
  return Status::ok();
}

flatbuffers::Verifier::Options verifier_options(const VerifyLimits& limits) {
  flatbuffers::Verifier::Options options;
  options.max_depth = limits.max_depth;
  options.max_tables = limits.max_tables;
  options.check_alignment = true;
  options.check_nested_flatbuffers = true;
  return options;
}

template <typename Enum, size_t N>
bool is_known(Enum value, const Enum (&known)[N]) {
  return std::find(std::begin(known), std::end(known), value) != std::end(known);
}

// The FlatBuffers 2.0 verifier checks a vector's length field for 4-byte alignment but not its
// elements for theirs: a crafted buffer can put a vector of 8-byte structs at an address that is
// 4 mod 8, and reading it is undefined behaviour (the libFuzzer run under UBSan found
// Release.handles). A builder always aligns them, so only a hand-made buffer is refused here.
template <typename T>
bool elements_aligned(const flatbuffers::Vector<T>* vector) {
  return vector == nullptr || reinterpret_cast<uintptr_t>(vector->Data()) % alignof(uint64_t) == 0;
}

Status check_struct_alignment(const wire::Request& request) {
  if (const wire::Release* release = request.body_as_Release(); release != nullptr) {
    if (!elements_aligned(release->handles())) {
      return invalid_argument("malformed request: Release.handles is not aligned to 8 bytes");
    }
  }
  return Status::ok();
}

std::string version_range() {
  return std::to_string(wire::kMinProtocolVersion) + ".." + std::to_string(wire::kProtocolVersion);
}

}  // namespace

Result<const wire::Request*> verify_request(std::span<const uint8_t> private_copy, const VerifyLimits& limits,
                                            uint64_t* request_id) {
  if (request_id != nullptr) *request_id = 0;
  RECON_RETURN_IF_ERROR(check_frame(private_copy, limits, "request", wire::RequestIdentifier()));
  flatbuffers::Verifier verifier(private_copy.data(), private_copy.size(), verifier_options(limits));
  if (!wire::VerifyRequestBuffer(verifier)) {
    return invalid_argument("malformed request: FlatBuffers verification failed (" +
                            std::to_string(private_copy.size()) + " bytes)");
  }
  const wire::Request* request = wire::GetRequest(private_copy.data());
  if (request_id != nullptr) *request_id = request->request_id();
  const uint32_t version = request->protocol_version();
  if (version == 0) return invalid_argument("request has no protocol_version");
  if (version < wire::kMinProtocolVersion || version > wire::kProtocolVersion) {
    return unimplemented("protocol version " + std::to_string(version) + " is not supported; this daemon speaks " +
                         version_range());
  }
  const wire::RequestBody type = request->body_type();
  if (type == wire::RequestBody::NONE) return invalid_argument("request has no body");
  if (!is_known(type, wire::EnumValuesRequestBody())) {
    return unimplemented("unknown request type " + std::to_string(static_cast<unsigned>(type)) +
                         " (client newer than daemon?)");
  }
  RECON_RETURN_IF_ERROR(check_struct_alignment(*request));
  RECON_RETURN_IF_ERROR(check_required_fields(*request));
  return request;
}

Result<const wire::Response*> verify_response(std::span<const uint8_t> private_copy, const VerifyLimits& limits) {
  RECON_RETURN_IF_ERROR(check_frame(private_copy, limits, "response", wire::ResponseIdentifier()));
  flatbuffers::Verifier verifier(private_copy.data(), private_copy.size(), verifier_options(limits));
  if (!wire::VerifyResponseBuffer(verifier)) {
    return invalid_argument("malformed response: FlatBuffers verification failed (" +
                            std::to_string(private_copy.size()) + " bytes)");
  }
  const wire::Response* response = wire::GetResponse(private_copy.data());
  const uint32_t version = response->protocol_version();
  if (version == 0) return invalid_argument("response has no protocol_version");
  const wire::ResponseBody type = response->body_type();
  if (type == wire::ResponseBody::NONE) return invalid_argument("response has no body");
  if (response->body() == nullptr && is_known(type, wire::EnumValuesResponseBody())) {
    return invalid_argument(std::string("the ") + wire::EnumNameResponseBody(type) + " response's body is absent");
  }
  if (type == wire::ResponseBody::Error) return response;  // readable at any version
  if (version < wire::kMinProtocolVersion || version > wire::kProtocolVersion) {
    return unimplemented("daemon answered in protocol version " + std::to_string(version) + "; this client speaks " +
                         version_range());
  }
  if (!is_known(type, wire::EnumValuesResponseBody())) {
    return unimplemented("unknown response type " + std::to_string(static_cast<unsigned>(type)) +
                         " (daemon newer than client?)");
  }
  return response;
}

namespace {

Status check_size_before_copy(std::span<const uint8_t> frame, const VerifyLimits& limits, const char* what) {
  if (frame.size() > limits.max_bytes) {
    return resource_exhausted(std::string(what) + " of " + std::to_string(frame.size()) +
                              " bytes exceeds the limit of " + std::to_string(limits.max_bytes));
  }
  return Status::ok();
}

}  // namespace

Result<Verified<wire::Request>> copy_and_verify_request(std::span<const uint8_t> frame, const VerifyLimits& limits,
                                                        uint64_t* request_id) {
  if (request_id != nullptr) *request_id = 0;
  RECON_RETURN_IF_ERROR(check_size_before_copy(frame, limits, "request"));
  std::vector<uint8_t> copy(frame.begin(), frame.end());  // operator new: 16-byte aligned
  RECON_ASSIGN_OR_RETURN(const wire::Request* request, verify_request(copy, limits, request_id));
  return Verified<wire::Request>(std::move(copy), request);
}

Result<Verified<wire::Response>> copy_and_verify_response(std::span<const uint8_t> frame, const VerifyLimits& limits) {
  RECON_RETURN_IF_ERROR(check_size_before_copy(frame, limits, "response"));
  std::vector<uint8_t> copy(frame.begin(), frame.end());
  RECON_ASSIGN_OR_RETURN(const wire::Response* response, verify_response(copy, limits));
  return Verified<wire::Response>(std::move(copy), response);
}

}  // namespace recon::daemon
