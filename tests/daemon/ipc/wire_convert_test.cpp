// wire_convert: error codes map one to one, unknown codes degrade to INTERNAL, and the envelope
// builders produce buffers that verify.
#include "daemon/ipc/wire_convert.h"

#include <gtest/gtest.h>

#include "daemon/ipc/message_verify.h"
#include "schema/protocol.h"

namespace recon::daemon {
namespace {

TEST(WireConvert, MapsEveryStatusCodeToItsErrorCodeAndBack) {
  for (StatusCode code : {StatusCode::kInvalidArgument, StatusCode::kNotFound, StatusCode::kPermissionDenied,
                          StatusCode::kResourceExhausted, StatusCode::kUnavailable, StatusCode::kInternal,
                          StatusCode::kDataLoss, StatusCode::kUnimplemented, StatusCode::kCancelled}) {
    EXPECT_EQ(from_wire(to_wire(code)), code) << status_code_name(code);
    EXPECT_STREQ(wire::EnumNameErrorCode(to_wire(code)), status_code_name(code));
  }
}

TEST(WireConvert, ReadsUnknownAndMissingCodesAsInternal) {
  EXPECT_EQ(from_wire(wire::ErrorCode::UNKNOWN), StatusCode::kInternal);
  EXPECT_EQ(from_wire(static_cast<wire::ErrorCode>(200)), StatusCode::kInternal);
  EXPECT_EQ(status_from_wire(nullptr).code(), StatusCode::kInternal);
}

TEST(WireConvert, ErrorResponseVerifiesAndCarriesTheStatus) {
  const auto bytes = error_response(42, resource_exhausted("too many regions"), 250);
  auto response = verify_response(bytes);
  ASSERT_TRUE(response.is_ok()) << response.status().to_string();
  EXPECT_EQ((*response)->request_id(), 42u);
  EXPECT_EQ((*response)->protocol_version(), wire::kProtocolVersion);
  EXPECT_TRUE((*response)->final());
  const wire::Error* error = (*response)->body_as_Error();
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->retry_after_ms(), 250u);
  const Status status = status_from_wire(error);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(), "too many regions");
}

TEST(WireConvert, RequestEnvelopeCarriesSessionOnlyWhenSet) {
  flatbuffers::FlatBufferBuilder b;
  const auto body = wire::CreateGetStatus(b);
  finish_request(b, 7, Id128{}, wire::RequestBody::GetStatus, body.Union());
  auto bytes = to_bytes(b);
  auto request = verify_request(bytes);
  ASSERT_TRUE(request.is_ok());
  EXPECT_EQ((*request)->session(), nullptr);
  EXPECT_TRUE(from_wire((*request)->session()).is_zero());

  flatbuffers::FlatBufferBuilder c;
  const auto body2 = wire::CreateGetStatus(c);
  finish_request(c, 8, Id128{5, 6}, wire::RequestBody::GetStatus, body2.Union());
  bytes = to_bytes(c);
  request = verify_request(bytes);
  ASSERT_TRUE(request.is_ok());
  EXPECT_EQ(from_wire((*request)->session()), (Id128{5, 6}));
}

TEST(WireConvert, ImageRefBecomesGeometry) {
  flatbuffers::FlatBufferBuilder b;
  const wire::Id128 region(1, 2);
  b.Finish(wire::CreateImageRef(b, &region, 4096, 480, 640, 2048));
  const auto* ref = flatbuffers::GetRoot<wire::ImageRef>(b.GetBufferPointer());
  auto geometry = image_geometry_from_wire(*ref);
  ASSERT_TRUE(geometry.is_ok());
  EXPECT_EQ(geometry->offset, 4096u);
  EXPECT_EQ(geometry->height, 480u);
  EXPECT_EQ(geometry->width, 640u);
  EXPECT_EQ(geometry->stride, 2048u);

  flatbuffers::FlatBufferBuilder c;
  c.Finish(wire::CreateImageRef(c, &region, 0, 1, 1, 3, static_cast<wire::PixelFormat>(9)));
  const auto* odd = flatbuffers::GetRoot<wire::ImageRef>(c.GetBufferPointer());
  EXPECT_EQ(image_geometry_from_wire(*odd).status().code(), StatusCode::kInvalidArgument);
}

TEST(Id128, RandomIdsAreNonZeroAndDistinct) {
  auto a = Id128::random();
  auto b = Id128::random();
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_FALSE(a->is_zero());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(a->to_string().size(), 32u);
  EXPECT_EQ((Id128{0xa, 0xb}).to_string(), "000000000000000b000000000000000a");
}

}  // namespace
}  // namespace recon::daemon
