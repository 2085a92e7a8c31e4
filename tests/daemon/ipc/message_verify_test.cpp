// verify_request / verify_response: well-formed messages pass; truncated, mutated, oversize,
// too-deep, too-wide, misaligned, mislabelled and wrong-version buffers are refused with the
// documented code, and nothing ever crashes (the mutation loops also run under ASan/UBSan).
#include "daemon/ipc/message_verify.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "daemon/ipc/wire_convert.h"
#include "schema/protocol.h"
#include "tests/daemon/ipc/test_util.h"

namespace recon::daemon {
namespace {

using testing::sample_infer_batch;

std::vector<uint8_t> sample_response() {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<wire::TensorInfo>> tensors;
  const std::vector<uint64_t> shape = {384, 512, 3};
  tensors.push_back(wire::CreateTensorInfoDirect(b, "pts3d_1", &shape, wire::DType::F32, 384 * 512 * 12));
  tensors.push_back(wire::CreateTensorInfoDirect(b, "conf_1", &shape, wire::DType::F16, 384 * 512 * 2));
  const auto timings = wire::CreateTimings(b, 1, 2, 3, 4, 10, 2);
  const wire::Id128 id(3, 4);
  const auto handle = wire::CreateResultHandleDirect(b, &id, &tensors, timings, 1000, "mast3r");
  const auto body = wire::CreateInferPairResult(b, handle);
  finish_response(b, 5, wire::ResponseBody::InferPairResult, body.Union());
  return to_bytes(b);
}

// Builds a request envelope by hand (version, body type and body chosen freely).
std::vector<uint8_t> envelope(uint32_t version, wire::RequestBody type, bool with_body = true) {
  flatbuffers::FlatBufferBuilder b;
  const auto body = wire::CreateGetStatus(b, false);
  wire::RequestBuilder request(b);
  request.add_protocol_version(version);
  request.add_request_id(1);
  request.add_body_type(type);
  if (with_body) request.add_body(body.Union());
  wire::FinishRequestBuffer(b, request.Finish());
  return to_bytes(b);
}

// InferBatch whose `images` vector holds `count` offsets to ONE Image table: 4 bytes each, but
// one table verification each.
std::vector<uint8_t> shared_reference_batch(size_t count) {
  flatbuffers::FlatBufferBuilder b;
  const wire::Id128 region(1, 1);
  const auto ref = wire::CreateImageRef(b, &region, 0, 16, 16, 48);
  const auto image = wire::CreateImage(b, wire::ImageSource::ImageRef, ref.Union());
  std::vector<flatbuffers::Offset<wire::Image>> images(count, image);
  const auto body = wire::CreateInferBatchDirect(b, "mast3r", &images);
  finish_request(b, 1, Id128{1, 2}, wire::RequestBody::InferBatch, body.Union());
  return to_bytes(b);
}

// Reads every field of a verified request, as a handler might (object API unpack).
void touch_everything(const wire::Request* request) {
  std::unique_ptr<wire::RequestT> unpacked(request->UnPack());
  ASSERT_NE(unpacked, nullptr);
}

void touch_everything(const wire::Response* response) {
  std::unique_ptr<wire::ResponseT> unpacked(response->UnPack());
  ASSERT_NE(unpacked, nullptr);
}

TEST(MessageVerify, AcceptsAWellFormedRequest) {
  const auto bytes = sample_infer_batch();
  auto request = verify_request(bytes);
  ASSERT_TRUE(request.is_ok()) << request.status().to_string();
  EXPECT_EQ((*request)->request_id(), 99u);
  EXPECT_EQ((*request)->body_type(), wire::RequestBody::InferBatch);
  EXPECT_EQ((*request)->body_as_InferBatch()->images()->size(), 4u);
}

TEST(MessageVerify, AcceptsAWellFormedResponse) {
  const auto bytes = sample_response();
  auto response = verify_response(bytes);
  ASSERT_TRUE(response.is_ok()) << response.status().to_string();
  EXPECT_EQ((*response)->body_as_InferPairResult()->handle()->tensors()->size(), 2u);
}

TEST(MessageVerify, RefusesEmptyAndTinyBuffers) {
  alignas(8) uint8_t zeros[8] = {};
  for (size_t n = 0; n <= 8; ++n) {
    auto request = verify_request({zeros, n});
    ASSERT_FALSE(request.is_ok());
    EXPECT_EQ(request.status().code(), StatusCode::kInvalidArgument) << n;
  }
}

TEST(MessageVerify, RefusesEveryTruncation) {
  const auto bytes = sample_infer_batch();
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    auto request = verify_request(cut);
    EXPECT_FALSE(request.is_ok()) << "prefix of " << n << " of " << bytes.size() << " bytes";
  }
  const auto answer = sample_response();
  for (size_t n = 0; n < answer.size(); ++n) {
    const std::vector<uint8_t> cut(answer.begin(), answer.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_FALSE(verify_response(cut).is_ok()) << n;
  }
}

// Every single-bit flip of a request: refused or, if the verifier accepts it, safe to read.
TEST(MessageVerify, SurvivesEverySingleBitFlip) {
  const auto bytes = sample_infer_batch();
  size_t refused = 0;
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    std::vector<uint8_t> mutated = bytes;
    mutated[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    auto request = verify_request(mutated);
    if (request.is_ok()) {
      touch_everything(*request);
    } else {
      ++refused;
    }
  }
  // Most flips land in data (ids, sizes, strings) and stay valid; offsets and vtables must not.
  EXPECT_GT(refused, bytes.size() / 4);
  std::printf("single-bit flips: %zu cases, %zu refused\n", bytes.size() * 8, refused);
}

// Deterministic random mutations (seeded): byte overwrites, with interesting values, plus
// truncation; thousands of cases over requests and responses.
TEST(MessageVerify, SurvivesThousandsOfRandomMutations) {
  const std::vector<std::vector<uint8_t>> seeds = {sample_infer_batch(), shared_reference_batch(8),
                                                   envelope(1, wire::RequestBody::GetStatus)};
  const auto answer = sample_response();
  std::mt19937_64 rng(0x5eed'1234);
  const uint8_t interesting[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0xfe, 0x04, 0x08, 0x10, 0x20, 0x40};
  constexpr int kCases = 20'000;
  int accepted = 0;
  for (int i = 0; i < kCases; ++i) {
    const bool as_response = (i % 4) == 3;
    std::vector<uint8_t> mutated = as_response ? answer : seeds[i % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % mutated.size();
      switch (rng() % 3) {
        case 0:
          mutated[at] = static_cast<uint8_t>(rng());
          break;
        case 1:
          mutated[at] = interesting[rng() % sizeof(interesting)];
          break;
        default: {  // a 32-bit value (offsets, lengths)
          const uint32_t v = (rng() % 2) ? static_cast<uint32_t>(rng()) : 0xffff'fff0u + (rng() % 16);
          if (at + 4 <= mutated.size()) std::memcpy(&mutated[at], &v, 4);
        }
      }
    }
    if (rng() % 8 == 0) mutated.resize(8 + rng() % (mutated.size() - 8));
    if (as_response) {
      auto response = verify_response(mutated);
      if (response.is_ok()) {
        ++accepted;
        touch_everything(*response);
      }
    } else {
      auto request = verify_request(mutated);
      if (request.is_ok()) {
        ++accepted;
        touch_everything(*request);
      }
    }
  }
  std::printf("random mutations: %d cases, %d accepted (and read safely)\n", kCases, accepted);
}

TEST(MessageVerify, RefusesOversizeMessagesAsResourceExhausted) {
  auto bytes = sample_infer_batch();
  VerifyLimits limits;
  limits.max_bytes = bytes.size() - 1;
  auto request = verify_request(bytes, limits);
  ASSERT_FALSE(request.is_ok());
  EXPECT_EQ(request.status().code(), StatusCode::kResourceExhausted);
  limits.max_bytes = bytes.size();
  EXPECT_TRUE(verify_request(bytes, limits).is_ok());

  // Default limit: 64 MiB. One byte more is refused before anything reads it.
  std::vector<uint8_t> huge(VerifyLimits{}.max_bytes + 1, 0);
  std::memcpy(huge.data(), bytes.data(), bytes.size());
  EXPECT_EQ(verify_request(huge).status().code(), StatusCode::kResourceExhausted);
}

TEST(MessageVerify, RefusesBuffersDeeperThanTheLimit) {
  const auto bytes = sample_infer_batch();
  // Find the depth the deepest sample actually needs; the default must cover it with margin.
  uint32_t needed = 0;
  for (uint32_t depth = 1; depth <= 64 && needed == 0; ++depth) {
    VerifyLimits limits;
    limits.max_depth = depth;
    if (verify_request(bytes, limits).is_ok()) needed = depth;
  }
  ASSERT_GT(needed, 1u);
  EXPECT_LE(needed + 4, VerifyLimits{}.max_depth) << "schema grew deeper: revisit max_depth";
  VerifyLimits shallow;
  shallow.max_depth = needed - 1;
  auto request = verify_request(bytes, shallow);
  ASSERT_FALSE(request.is_ok());
  EXPECT_EQ(request.status().code(), StatusCode::kInvalidArgument);
}

TEST(MessageVerify, BoundsVerifierWorkOnSharedReferences) {
  // 200'000 references to one table: 800 KB of offsets, 200'000 table verifications.
  const auto wide = shared_reference_batch(200'000);
  EXPECT_LT(wide.size(), size_t{1} << 20);
  auto request = verify_request(wide);
  ASSERT_FALSE(request.is_ok());
  EXPECT_EQ(request.status().code(), StatusCode::kInvalidArgument);

  const auto modest = shared_reference_batch(1000);
  EXPECT_TRUE(verify_request(modest).is_ok());
  VerifyLimits tight;
  tight.max_tables = 500;
  EXPECT_FALSE(verify_request(modest, tight).is_ok());
}

TEST(MessageVerify, RefusesAMissingOrUnsupportedProtocolVersion) {
  auto missing = verify_request(envelope(0, wire::RequestBody::GetStatus));
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);

  auto newer = verify_request(sample_infer_batch(wire::kProtocolVersion + 1));
  ASSERT_FALSE(newer.is_ok());
  EXPECT_EQ(newer.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(newer.status().message().find("protocol version"), std::string::npos);

  EXPECT_TRUE(verify_request(envelope(wire::kProtocolVersion, wire::RequestBody::GetStatus)).is_ok());
}

TEST(MessageVerify, RefusesAMissingOrUnknownBody) {
  auto none = verify_request(envelope(1, wire::RequestBody::NONE, false));
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);

  // A body type from a future schema: structurally fine, but this build cannot serve it.
  auto future = verify_request(envelope(1, static_cast<wire::RequestBody>(77)));
  ASSERT_FALSE(future.is_ok());
  EXPECT_EQ(future.status().code(), StatusCode::kUnimplemented);
}

TEST(MessageVerify, RefusesEveryRequestTypeWhoseBodyIsAbsent) {
  // The verifier accepts a union type without its table; verify_request must not.
  for (const wire::RequestBody type : wire::EnumValuesRequestBody()) {
    if (type == wire::RequestBody::NONE) continue;
    auto request = verify_request(envelope(wire::kProtocolVersion, type, /*with_body=*/false));
    ASSERT_FALSE(request.is_ok()) << wire::EnumNameRequestBody(type);
    EXPECT_EQ(request.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(request.status().message(), std::string(wire::EnumNameRequestBody(type)) + " request's body is absent");
  }
}

TEST(MessageVerify, RefusesAResponseWhoseBodyIsAbsent) {
  for (const wire::ResponseBody type :
       {wire::ResponseBody::InferPairResult, wire::ResponseBody::Error, wire::ResponseBody::StatusReport}) {
    flatbuffers::FlatBufferBuilder b;
    wire::ResponseBuilder response(b);
    response.add_protocol_version(wire::kProtocolVersion);
    response.add_request_id(3);
    response.add_body_type(type);
    wire::FinishResponseBuffer(b, response.Finish());
    auto verified = verify_response(to_bytes(b));
    ASSERT_FALSE(verified.is_ok()) << wire::EnumNameResponseBody(type);
    EXPECT_EQ(verified.status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(MessageVerify, ARequestThatPassesHasEveryFieldItsVerbNeeds) {
  // Fetch with a handle and an inline destination passes; without the handle it does not.
  flatbuffers::FlatBufferBuilder good;
  const wire::Id128 handle(1, 2);
  const auto destination = wire::CreateInlineDestination(good);
  finish_request(
      good, 1, Id128{1, 1}, wire::RequestBody::Fetch,
      wire::CreateFetch(good, &handle, 0, wire::FetchDestination::InlineDestination, destination.Union()).Union());
  EXPECT_TRUE(verify_request(to_bytes(good)).is_ok());
  flatbuffers::FlatBufferBuilder bad;
  const auto bad_destination = wire::CreateInlineDestination(bad);
  finish_request(
      bad, 1, Id128{1, 1}, wire::RequestBody::Fetch,
      wire::CreateFetch(bad, nullptr, 0, wire::FetchDestination::InlineDestination, bad_destination.Union()).Union());
  auto refused = verify_request(to_bytes(bad));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().message(), "Fetch.handle is absent");
}

TEST(MessageVerify, RefusesAResponseOfferedAsARequestAndViceVersa) {
  auto request = verify_request(sample_response());
  ASSERT_FALSE(request.is_ok());
  EXPECT_EQ(request.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(request.status().message().find("RCNA"), std::string::npos);
  EXPECT_FALSE(verify_response(sample_infer_batch()).is_ok());
}

TEST(MessageVerify, RefusesAMisalignedBufferAsACallerBug) {
  const auto bytes = sample_infer_batch();
  std::vector<uint8_t> shifted(bytes.size() + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  auto request = verify_request({shifted.data() + 1, bytes.size()});
  ASSERT_FALSE(request.is_ok());
  EXPECT_EQ(request.status().code(), StatusCode::kInternal);
}

TEST(MessageVerify, ReadsAnErrorAnswerAtAnyProtocolVersion) {
  flatbuffers::FlatBufferBuilder b;
  const auto error = wire::CreateErrorDirect(b, wire::ErrorCode::UNIMPLEMENTED, "speak v9");
  wire::ResponseBuilder response(b);
  response.add_protocol_version(9);
  response.add_body_type(wire::ResponseBody::Error);
  response.add_body(error.Union());
  wire::FinishResponseBuffer(b, response.Finish());
  auto bytes = to_bytes(b);
  auto verified = verify_response(bytes);
  ASSERT_TRUE(verified.is_ok()) << verified.status().to_string();
  EXPECT_EQ(status_from_wire((*verified)->body_as_Error()).code(), StatusCode::kUnimplemented);

  flatbuffers::FlatBufferBuilder other;
  const auto body = wire::CreateUnloadModelResult(other);
  wire::ResponseBuilder newer(other);
  newer.add_protocol_version(9);
  newer.add_body_type(wire::ResponseBody::UnloadModelResult);
  newer.add_body(body.Union());
  wire::FinishResponseBuffer(other, newer.Finish());
  bytes = to_bytes(other);
  EXPECT_EQ(verify_response(bytes).status().code(), StatusCode::kUnimplemented);
}

TEST(MessageVerify, CopyAndVerifyTakesAnyAlignmentAndKeepsTheViewValidWhenMoved) {
  const auto bytes = sample_infer_batch();
  std::vector<uint8_t> frame(bytes.size() + 3);
  std::memcpy(frame.data() + 3, bytes.data(), bytes.size());  // like a small zmq frame
  auto verified = copy_and_verify_request({frame.data() + 3, bytes.size()});
  ASSERT_TRUE(verified.is_ok()) << verified.status().to_string();
  std::memset(frame.data(), 0xff, frame.size());  // the peer's buffer changes: our copy does not
  Verified<wire::Request> moved = std::move(verified).value();
  EXPECT_EQ(moved->request_id(), 99u);
  EXPECT_EQ(moved->body_as_InferBatch()->images()->size(), 4u);
  EXPECT_EQ(moved.bytes().size(), bytes.size());

  const auto answer = sample_response();
  auto response = copy_and_verify_response(answer);
  ASSERT_TRUE(response.is_ok());
  EXPECT_EQ((*response)->request_id(), 5u);
}

TEST(MessageVerify, CopyAndVerifyRefusesOversizeFramesBeforeCopying) {
  const auto bytes = sample_infer_batch();
  VerifyLimits limits;
  limits.max_bytes = 64;
  auto verified = copy_and_verify_request(bytes, limits);
  ASSERT_FALSE(verified.is_ok());
  EXPECT_EQ(verified.status().code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(copy_and_verify_request(sample_response()).is_ok());
}

}  // namespace
}  // namespace recon::daemon
