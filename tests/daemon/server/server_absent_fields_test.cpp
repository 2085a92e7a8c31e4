// recond against requests that pass the FlatBuffers verifier but leave out what the verb needs:
// a union type set without its table (every verb, on every socket that could receive it), and
// absent ids, image sources and destinations inside the bodies. Each one is answered
// INVALID_ARGUMENT naming what is absent, and the daemon goes on serving.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "daemon/ipc/region_client.h"
#include "daemon/ipc/wire_convert.h"
#include "schema/protocol.h"
#include "tests/daemon/server/server_harness.h"
#include "tests/daemon/server/test_client.h"

namespace recon::daemon::testing {
namespace {

// The frame of the report that crashed recond: InferPair on client.sock, body absent.
constexpr const char* kReportedFrame =
    "1800000052434e51000000000c00280024001800080007000c000000000000043f86b416218060d4ccf212749e18de51cc000000000000"
    "000000000001000000";

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// A Request whose body_type is `type` and whose body is absent.
std::vector<uint8_t> bodyless(uint64_t id, const Id128& session, wire::RequestBody type) {
  flatbuffers::FlatBufferBuilder b(128);
  wire::RequestBuilder request(b);
  request.add_protocol_version(wire::kProtocolVersion);
  request.add_request_id(id);
  const wire::Id128 token = to_wire(session);
  if (!session.is_zero()) request.add_session(&token);
  request.add_body_type(type);
  wire::FinishRequestBuffer(b, request.Finish());
  return to_bytes(b);
}

std::vector<uint8_t> with_body(uint64_t id, const Id128& session, wire::RequestBody type,
                               flatbuffers::FlatBufferBuilder& b, flatbuffers::Offset<void> body) {
  finish_request(b, id, session, type, body);
  return to_bytes(b);
}

class AbsentFields : public ::testing::Test {
 protected:
  void SetUp() override {
    harness_ = ServerHarness::start();
    ASSERT_TRUE(harness_->error().empty()) << harness_->error();
    auto client = TestClient::connect(harness_->dir(), "absent-fields");
    ASSERT_TRUE(client.is_ok()) << client.status().to_string();
    client_ = std::move(client).value();
  }

  // Sends `request` on `client` and expects INVALID_ARGUMENT whose message holds `words`.
  void expect_refused(TestClient& client, const std::vector<uint8_t>& request, uint64_t id, const std::string& words,
                      const std::string& what) {
    auto answer = client.call(request, id, 20'000);
    ASSERT_TRUE(answer.is_ok()) << what << ": no answer: " << answer.status().to_string();
    EXPECT_EQ(answer->code(), StatusCode::kInvalidArgument) << what << ": " << answer->error_message();
    EXPECT_NE(answer->error_message().find(words), std::string::npos) << what << ": " << answer->error_message();
  }

  void expect_serving() {
    const uint64_t id = client_->next_id();
    auto status = client_->call(make_status(id), id);
    ASSERT_TRUE(status.is_ok()) << status.status().to_string();
    EXPECT_EQ(status->type(), wire::ResponseBody::StatusReport);
    const auto pixels = test_image(kTinyHeight, kTinyWidth, 3);
    const ImageArg image{Id128{}, 0, kTinyHeight, kTinyWidth, kTinyWidth * 3, pixels};
    const uint64_t infer = client_->next_id();
    auto pair = client_->call(make_infer_pair(infer, client_->session(), image, image), infer);
    ASSERT_TRUE(pair.is_ok()) << pair.status().to_string();
    EXPECT_EQ(pair->type(), wire::ResponseBody::InferPairResult) << pair->error_message();
  }

  std::unique_ptr<ServerHarness> harness_;
  std::unique_ptr<TestClient> client_;
};

TEST_F(AbsentFields, TheReportedFrameIsRefusedAndTheDaemonServesOn) {
  const std::vector<uint8_t> frame = from_hex(kReportedFrame);
  ASSERT_EQ(frame.size(), 64u);
  ASSERT_TRUE(client_->send_frames({frame}).is_ok());
  auto answer = client_->receive();
  ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
  EXPECT_EQ(answer->code(), StatusCode::kInvalidArgument);
  EXPECT_NE(answer->error_message().find("InferPair request's body is absent"), std::string::npos)
      << answer->error_message();
  expect_serving();
}

TEST_F(AbsentFields, EveryVerbWithoutItsBodyIsRefusedOnTheClientAndManagerSockets) {
  auto manager = TestClient::connect(harness_->dir(), "manager", /*open_session=*/false, "manager.sock");
  ASSERT_TRUE(manager.is_ok()) << manager.status().to_string();
  for (const wire::RequestBody type : wire::EnumValuesRequestBody()) {
    if (type == wire::RequestBody::NONE) continue;
    const std::string name = wire::EnumNameRequestBody(type);
    uint64_t id = client_->next_id();
    expect_refused(*client_, bodyless(id, client_->session(), type), id, name + " request's body is absent",
                   "client.sock " + name);
    id = (*manager)->next_id();
    expect_refused(**manager, bodyless(id, Id128{}, type), id, name + " request's body is absent",
                   "manager.sock " + name);
  }
  expect_serving();
}

TEST_F(AbsentFields, EveryVerbWithoutItsBodyIsRefusedOnTheRegionsSocket) {
  auto opened = RegionChannel::connect(harness_->dir() + "/regions.sock");
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  RegionChannel channel = std::move(opened).value();
  auto memfd = create_sealed_memfd("absent-fields", 4096);
  ASSERT_TRUE(memfd.is_ok()) << memfd.status().to_string();
  uint64_t id = 1;
  for (const wire::RequestBody type : wire::EnumValuesRequestBody()) {
    if (type == wire::RequestBody::NONE) continue;
    const std::string name = wire::EnumNameRequestBody(type);
    // RegisterRegion is sent as it must be, with its memfd: only the body is missing.
    const int fd = type == wire::RequestBody::RegisterRegion ? memfd->get() : -1;
    ASSERT_TRUE(channel.send(bodyless(id, Id128{}, type), fd).is_ok()) << name;
    auto packet = channel.receive(RegionChannel::kDefaultMaxMessageBytes, 20'000);
    ASSERT_TRUE(packet.is_ok()) << name << ": " << packet.status().to_string();
    ASSERT_EQ(packet->event, ReceiveEvent::kMessage) << name << ": the daemon closed the side channel";
    auto answer = verify_response(packet->bytes);
    ASSERT_TRUE(answer.is_ok()) << name << ": " << answer.status().to_string();
    ASSERT_EQ((*answer)->body_type(), wire::ResponseBody::Error) << name;
    const Status status = status_from_wire((*answer)->body_as_Error());
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << name << ": " << status.message();
    EXPECT_NE(status.message().find(name + " request's body is absent"), std::string::npos) << status.message();
    ++id;
  }
  // The same connection still registers a region (its session lives).
  auto session = RegionClient::open(std::move(channel), "absent-fields-regions");
  ASSERT_TRUE(session.is_ok()) << session.status().to_string();
  auto region = session->register_region(memfd->get(), 4096, "after");
  EXPECT_TRUE(region.is_ok()) << region.status().to_string();
  expect_serving();
}

TEST_F(AbsentFields, AbsentFieldsInsideABodyAreNamed) {
  const Id128 session = client_->session();
  auto send = [&](const std::string& field, auto build) {
    flatbuffers::FlatBufferBuilder b(256);
    const uint64_t id = client_->next_id();
    expect_refused(*client_, build(b, id), id, field + " is absent", field);
  };
  // An image: a union type without its table, a region image without its region id.
  auto inline_image = [](flatbuffers::FlatBufferBuilder& b) {
    const std::vector<uint8_t> pixels(kTinyHeight * kTinyWidth * 3, 9);
    const auto data = wire::CreateInlineImageDirect(b, kTinyHeight, kTinyWidth, wire::PixelFormat::RGB8, &pixels);
    return wire::CreateImage(b, wire::ImageSource::InlineImage, data.Union());
  };
  send("InferPair.image1.source", [&](flatbuffers::FlatBufferBuilder& b, uint64_t id) {
    const auto good = inline_image(b);
    wire::ImageBuilder image(b);
    image.add_source_type(wire::ImageSource::ImageRef);
    const auto broken = image.Finish();
    return with_body(id, session, wire::RequestBody::InferPair, b, wire::CreateInferPair(b, 0, broken, good).Union());
  });
  send("InferPair.image2.source.region_id", [&](flatbuffers::FlatBufferBuilder& b, uint64_t id) {
    const auto good = inline_image(b);
    const auto ref = wire::CreateImageRef(b, nullptr, 0, kTinyHeight, kTinyWidth, kTinyWidth * 3);
    const auto broken = wire::CreateImage(b, wire::ImageSource::ImageRef, ref.Union());
    return with_body(id, session, wire::RequestBody::InferPair, b, wire::CreateInferPair(b, 0, good, broken).Union());
  });
  send("InferPair.image2", [&](flatbuffers::FlatBufferBuilder& b, uint64_t id) {
    const auto good = inline_image(b);
    return with_body(id, session, wire::RequestBody::InferPair, b, wire::CreateInferPair(b, 0, good).Union());
  });
  send("InferBatch.images[1].source", [&](flatbuffers::FlatBufferBuilder& b, uint64_t id) {
    const auto good = inline_image(b);
    const auto empty = wire::CreateImage(b);
    const auto images = b.CreateVector(std::vector<flatbuffers::Offset<wire::Image>>{good, empty});
    return with_body(id, session, wire::RequestBody::InferBatch, b, wire::CreateInferBatch(b, 0, images).Union());
  });
  send("EncodeRetrieval.images[0].source", [&](flatbuffers::FlatBufferBuilder& b, uint64_t id) {
    const auto images = b.CreateVector(std::vector<flatbuffers::Offset<wire::Image>>{wire::CreateImage(b)});
    return with_body(id, session, wire::RequestBody::EncodeRetrieval, b,
                     wire::CreateEncodeRetrieval(b, 0, images).Union());
  });
  send("Infer.model", [&](flatbuffers::FlatBufferBuilder& b, uint64_t id) {
    return with_body(id, session, wire::RequestBody::Infer, b, wire::CreateInfer(b).Union());
  });
  send("Infer.inputs[1].name", [&](flatbuffers::FlatBufferBuilder& b, uint64_t id) {
    const auto model = b.CreateString("mast3r");
    const auto named =
        wire::CreateNamedInput(b, b.CreateString("image1"), wire::InputSource::Image, inline_image(b).Union());
    const auto unnamed = wire::CreateNamedInput(b, 0, wire::InputSource::Image, inline_image(b).Union());
    const auto inputs = b.CreateVector(std::vector<flatbuffers::Offset<wire::NamedInput>>{named, unnamed});
    return with_body(id, session, wire::RequestBody::Infer, b, wire::CreateInfer(b, model, inputs).Union());
  });
  send("Infer.inputs[0].source.handle", [&](flatbuffers::FlatBufferBuilder& b, uint64_t id) {
    const auto model = b.CreateString("match");
    const auto ref = wire::CreateResultRef(b);
    const auto input = wire::CreateNamedInput(b, b.CreateString("pair"), wire::InputSource::ResultRef, ref.Union());
    const auto inputs = b.CreateVector(std::vector<flatbuffers::Offset<wire::NamedInput>>{input});
    return with_body(id, session, wire::RequestBody::Infer, b, wire::CreateInfer(b, model, inputs).Union());
  });
  send("Match.source", [&](flatbuffers::FlatBufferBuilder& b, uint64_t id) {
    return with_body(id, session, wire::RequestBody::Match, b, wire::CreateMatch(b).Union());
  });
  send("UnregisterRegion.region_id", [&](flatbuffers::FlatBufferBuilder& b, uint64_t id) {
    return with_body(id, session, wire::RequestBody::UnregisterRegion, b, wire::CreateUnregisterRegion(b).Union());
  });
  send("Fetch.handle", [&](flatbuffers::FlatBufferBuilder& b, uint64_t id) {
    const auto inline_destination = wire::CreateInlineDestination(b);
    return with_body(
        id, session, wire::RequestBody::Fetch, b,
        wire::CreateFetch(b, nullptr, 0, wire::FetchDestination::InlineDestination, inline_destination.Union())
            .Union());
  });
  const wire::Id128 some_handle(1, 2);
  send("Fetch.destination", [&](flatbuffers::FlatBufferBuilder& b, uint64_t id) {
    return with_body(id, session, wire::RequestBody::Fetch, b,
                     wire::CreateFetch(b, &some_handle, 0, wire::FetchDestination::RegionDestination, 0).Union());
  });
  send("Fetch.destination.region_id", [&](flatbuffers::FlatBufferBuilder& b, uint64_t id) {
    const auto region = wire::CreateRegionDestination(b, nullptr, 0, 0, 0);
    return with_body(
        id, session, wire::RequestBody::Fetch, b,
        wire::CreateFetch(b, &some_handle, 0, wire::FetchDestination::RegionDestination, region.Union()).Union());
  });

  auto manager = TestClient::connect(harness_->dir(), "manager", /*open_session=*/false, "manager.sock");
  ASSERT_TRUE(manager.is_ok()) << manager.status().to_string();
  {
    flatbuffers::FlatBufferBuilder b(64);
    const uint64_t id = (*manager)->next_id();
    expect_refused(**manager,
                   with_body(id, Id128{}, wire::RequestBody::UnloadModel, b, wire::CreateUnloadModel(b).Union()), id,
                   "UnloadModel.name is absent", "UnloadModel.name");
  }
  {
    flatbuffers::FlatBufferBuilder b(64);
    const uint64_t id = (*manager)->next_id();
    const auto name = b.CreateString("other");
    expect_refused(**manager,
                   with_body(id, Id128{}, wire::RequestBody::LoadModel, b, wire::CreateLoadModel(b, name).Union()), id,
                   "LoadModel.weights is absent", "LoadModel.weights");
  }
  expect_serving();
}

}  // namespace
}  // namespace recon::daemon::testing
