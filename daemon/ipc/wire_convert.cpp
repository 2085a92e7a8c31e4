// wire_convert: StatusCode <-> ErrorCode, ids, image geometry, envelope builders.
#include "daemon/ipc/wire_convert.h"

#include <string>

#include "schema/protocol.h"

namespace recon::daemon {

// ErrorCode is defined to equal StatusCode value by value (common.fbs); keep it so.
#define RECON_SAME_CODE_(status, wire_code) \
  static_assert(static_cast<int>(StatusCode::status) == static_cast<int>(wire::ErrorCode::wire_code))
RECON_SAME_CODE_(kInvalidArgument, INVALID_ARGUMENT);
RECON_SAME_CODE_(kNotFound, NOT_FOUND);
RECON_SAME_CODE_(kPermissionDenied, PERMISSION_DENIED);
RECON_SAME_CODE_(kResourceExhausted, RESOURCE_EXHAUSTED);
RECON_SAME_CODE_(kUnavailable, UNAVAILABLE);
RECON_SAME_CODE_(kInternal, INTERNAL);
RECON_SAME_CODE_(kDataLoss, DATA_LOSS);
RECON_SAME_CODE_(kUnimplemented, UNIMPLEMENTED);
RECON_SAME_CODE_(kCancelled, CANCELLED);
#undef RECON_SAME_CODE_

wire::ErrorCode to_wire(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return wire::ErrorCode::UNKNOWN;  // an Error never carries OK
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kPermissionDenied:
    case StatusCode::kResourceExhausted:
    case StatusCode::kUnavailable:
    case StatusCode::kInternal:
    case StatusCode::kDataLoss:
    case StatusCode::kUnimplemented:
    case StatusCode::kCancelled:
      return static_cast<wire::ErrorCode>(code);
  }
  return wire::ErrorCode::INTERNAL;
}

StatusCode from_wire(wire::ErrorCode code) {
  switch (code) {
    case wire::ErrorCode::INVALID_ARGUMENT:
    case wire::ErrorCode::NOT_FOUND:
    case wire::ErrorCode::PERMISSION_DENIED:
    case wire::ErrorCode::RESOURCE_EXHAUSTED:
    case wire::ErrorCode::UNAVAILABLE:
    case wire::ErrorCode::INTERNAL:
    case wire::ErrorCode::DATA_LOSS:
    case wire::ErrorCode::UNIMPLEMENTED:
    case wire::ErrorCode::CANCELLED:
      return static_cast<StatusCode>(code);
    case wire::ErrorCode::UNKNOWN:
      break;
  }
  return StatusCode::kInternal;
}

Status status_from_wire(const wire::Error* error) {
  if (error == nullptr) return internal_error("error answer without details");
  std::string message = error->message() ? error->message()->str() : std::string();
  if (message.empty()) message = "(no message)";
  return {from_wire(error->code()), std::move(message)};
}

Result<ImageGeometry> image_geometry_from_wire(const wire::ImageRef& ref) {
  ImageGeometry geometry;
  switch (ref.format()) {
    case wire::PixelFormat::RGB8:
      geometry.format = PixelFormat::kRgb8;
      break;
    default:
      return invalid_argument("unknown pixel format " + std::to_string(static_cast<unsigned>(ref.format())));
  }
  geometry.offset = ref.offset();
  geometry.height = ref.height();
  geometry.width = ref.width();
  geometry.stride = ref.stride();
  return geometry;
}

void finish_response(flatbuffers::FlatBufferBuilder& builder, uint64_t request_id, wire::ResponseBody type,
                     flatbuffers::Offset<void> body, bool final) {
  wire::ResponseBuilder response(builder);
  response.add_protocol_version(wire::kProtocolVersion);
  response.add_request_id(request_id);
  response.add_final(final);
  response.add_body_type(type);
  response.add_body(body);
  wire::FinishResponseBuffer(builder, response.Finish());
}

std::vector<uint8_t> error_response(uint64_t request_id, const Status& status, uint32_t retry_after_ms) {
  flatbuffers::FlatBufferBuilder builder(256);
  const auto message = builder.CreateString(status.message());
  const auto error = wire::CreateError(builder, to_wire(status.code()), message, retry_after_ms);
  finish_response(builder, request_id, wire::ResponseBody::Error, error.Union());
  return to_bytes(builder);
}

void finish_request(flatbuffers::FlatBufferBuilder& builder, uint64_t request_id, const Id128& session,
                    wire::RequestBody type, flatbuffers::Offset<void> body) {
  const wire::Id128 wire_session = to_wire(session);
  wire::RequestBuilder request(builder);
  request.add_protocol_version(wire::kProtocolVersion);
  request.add_request_id(request_id);
  if (!session.is_zero()) request.add_session(&wire_session);
  request.add_body_type(type);
  request.add_body(body);
  wire::FinishRequestBuffer(builder, request.Finish());
}

std::vector<uint8_t> to_bytes(const flatbuffers::FlatBufferBuilder& builder) {
  const uint8_t* data = builder.GetBufferPointer();
  return std::vector<uint8_t>(data, data + builder.GetSize());
}

}  // namespace recon::daemon
