// recond in-process: EncodeRetrieval on the tiny model's encoder with the golden retrieval head
// (tests/golden/retrieval/projector, 32-wide tokens like tiny_same's encoder). The answer must
// equal the engine's encode() followed by the same head in-process, and bad requests get typed
// errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "daemon/ipc/wire_convert.h"
#include "daemon/serving/retrieval/retrieval_instance.h"
#include "tests/daemon/server/server_harness.h"
#include "tests/daemon/server/test_client.h"
#include "tests/daemon/server/test_expect.h"

namespace recon::daemon::testing {
namespace {

constexpr uint32_t kH = kTinyHeight, kW = kTinyWidth;
const std::string kRetrievalHead = kGoldenDir + "/retrieval/projector/model.safetensors";

std::vector<uint8_t> make_encode(uint64_t id, const Id128& session, const std::vector<ImageArg>& images, uint32_t top_k,
                                 const std::string& model = "") {
  flatbuffers::FlatBufferBuilder b(4096);
  std::vector<flatbuffers::Offset<wire::Image>> wire_images;
  for (const ImageArg& image : images) {
    const auto data = b.CreateVector(image.pixels);
    const auto inline_image = wire::CreateInlineImage(b, image.height, image.width, wire::PixelFormat::RGB8, data);
    wire_images.push_back(wire::CreateImage(b, wire::ImageSource::InlineImage, inline_image.Union()));
  }
  const auto body =
      wire::CreateEncodeRetrievalDirect(b, model.empty() ? nullptr : model.c_str(), &wire_images, 0, top_k);
  finish_request(b, id, session, wire::RequestBody::EncodeRetrieval, body.Union());
  return to_bytes(b);
}

ServerOptions with_retrieval() {
  ServerOptions options = tiny_options();
  ModelSpec head;
  head.name = "retrieval";
  head.kind = "retrieval";
  head.path = kRetrievalHead;
  head.backbone = "mast3r";
  options.models.push_back(head);
  return options;
}

TEST(RecondRetrieval, EncodeRetrievalEqualsTheEncoderAndHeadInProcess) {
  auto harness = ServerHarness::start(with_retrieval());
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "retrieval");
  ASSERT_TRUE(client.is_ok());
  TestClient& c = **client;
  std::vector<ImageArg> images;
  for (uint32_t seed = 20; seed < 24; ++seed) images.push_back({{}, 0, kH, kW, 0, test_image(kH, kW, seed)});

  const uint64_t id = c.next_id();
  auto answer = c.call(make_encode(id, c.session(), images, 2), id);
  ASSERT_TRUE(answer.is_ok());
  ASSERT_EQ(answer->type(), wire::ResponseBody::EncodeRetrievalResult) << answer->error_message();
  const wire::EncodeRetrievalResult* result = answer->response->body_as_EncodeRetrievalResult();
  EXPECT_EQ(result->handle()->model()->str(), "retrieval");
  ASSERT_EQ(result->pairs()->size(), 8u);
  ASSERT_EQ(result->scores()->size(), 8u);

  // In-process: the same encoder and head on the same device.
  auto engine = gpu::Mast3rEngine::load(harness->runtime(), kTinyModel, gpu::Precision::kF32);
  ASSERT_TRUE(engine.is_ok());
  std::vector<gpu::ImageU8View> views;
  for (const ImageArg& image : images) views.push_back({image.pixels.data(), kH, kW, 0});
  auto tokens = (*engine)->encode(views);
  ASSERT_TRUE(tokens.is_ok()) << tokens.status().to_string();
  auto head = RetrievalInstance::open(harness->runtime(), kRetrievalHead);
  ASSERT_TRUE(head.is_ok()) << head.status().to_string();
  auto expected = (*head)->retrieve(*tokens, 2);
  ASSERT_TRUE(expected.is_ok()) << expected.status().to_string();
  for (uint32_t i = 0; i < 8; ++i) {
    EXPECT_EQ(result->pairs()->Get(i)->first(), expected->pairs[i].first);
    EXPECT_EQ(result->pairs()->Get(i)->second(), expected->pairs[i].second);
    EXPECT_EQ(result->scores()->Get(i), expected->scores[i]);
  }
  const uint64_t fid = c.next_id();
  auto fetched = c.call(make_fetch(fid, c.session(), from_wire(result->handle()->id()), {}, std::nullopt), fid);
  ASSERT_TRUE(fetched.is_ok());
  const TensorBytes got = inline_tensors(*fetched);
  for (const StoredTensor& t : expected->tensors) {
    std::vector<uint8_t> bytes(t.bytes);
    ASSERT_TRUE(t.tensor.download(harness->runtime(), bytes.data(), bytes.size()).is_ok());
    ASSERT_EQ(got.count(t.name), 1u) << t.name;
    EXPECT_TRUE(got.at(t.name) == bytes) << t.name;
  }
}

// The generic Infer on the retrieval model: the list input "images" and parameter top_k give the
// tensors EncodeRetrieval gives, and the chosen pairs as tensors top_pairs and top_scores.
TEST(RecondRetrieval, InferOnTheRetrievalModelHoldsTheTopPairsAsTensors) {
  auto harness = ServerHarness::start(with_retrieval());
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "retrieval-infer");
  ASSERT_TRUE(client.is_ok());
  TestClient& c = **client;
  std::vector<ImageArg> images;
  std::vector<NamedArg> inputs;
  for (uint32_t seed = 40; seed < 43; ++seed) {
    images.push_back({{}, 0, kH, kW, 0, test_image(kH, kW, seed)});
    inputs.push_back(NamedArg{"images", images.back(), {}, {}});
  }
  uint64_t id = c.next_id();
  auto released = c.call(make_encode(id, c.session(), images, 1), id);
  ASSERT_TRUE(released.is_ok());
  ASSERT_EQ(released->type(), wire::ResponseBody::EncodeRetrievalResult) << released->error_message();
  const wire::EncodeRetrievalResult* encoded = released->response->body_as_EncodeRetrievalResult();
  id = c.next_id();
  auto generic = c.call(make_infer(id, c.session(), "retrieval", inputs, {{"top_k", "1"}}), id);
  ASSERT_TRUE(generic.is_ok());
  ASSERT_EQ(generic->type(), wire::ResponseBody::InferResult) << generic->error_message();

  const auto fetch = [&](const wire::ResultHandle* handle) {
    const uint64_t fid = c.next_id();
    auto fetched = c.call(make_fetch(fid, c.session(), from_wire(handle->id()), {}, std::nullopt), fid);
    EXPECT_TRUE(fetched.is_ok());
    return fetched.is_ok() ? inline_tensors(*fetched) : TensorBytes{};
  };
  const TensorBytes want = fetch(encoded->handle());
  const TensorBytes got = fetch(generic->response->body_as_InferResult()->handle());
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, bytes] : want) EXPECT_TRUE(got.at(name) == bytes) << name;
  ASSERT_EQ(got.at("top_pairs").size(), 3 * 2 * sizeof(int32_t));
  ASSERT_EQ(got.at("top_scores").size(), 3 * sizeof(float));
  for (uint32_t i = 0; i < 3; ++i) {
    int32_t pair[2];
    float score = 0;
    std::memcpy(pair, got.at("top_pairs").data() + i * sizeof(pair), sizeof(pair));
    std::memcpy(&score, got.at("top_scores").data() + i * sizeof(float), sizeof(float));
    EXPECT_EQ(static_cast<uint32_t>(pair[0]), encoded->pairs()->Get(i)->first());
    EXPECT_EQ(static_cast<uint32_t>(pair[1]), encoded->pairs()->Get(i)->second());
    EXPECT_EQ(score, encoded->scores()->Get(i));
  }
  // Its inputs are the kind's: a pair's names are refused.
  id = c.next_id();
  auto misnamed = c.call(make_infer(id, c.session(), "retrieval", {NamedArg{"image1", images[0], {}, {}}}), id);
  ASSERT_TRUE(misnamed.is_ok());
  EXPECT_NE(misnamed->error_message().find("images named 'images'; the request has 0"), std::string::npos)
      << misnamed->error_message();
}

TEST(RecondRetrieval, RefusesBadRetrievalRequests) {
  auto harness = ServerHarness::start(with_retrieval());
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "bad-retrieval");
  ASSERT_TRUE(client.is_ok());
  TestClient& c = **client;
  const ImageArg a{{}, 0, kH, kW, 0, test_image(kH, kW, 1)};
  const ImageArg tall{{}, 0, kW, kH, 0, test_image(kW, kH, 2)};  // prepared to another size
  const auto expect = [&](const std::vector<uint8_t>& request, uint64_t id, StatusCode code,
                          const std::string& message) {
    auto answer = c.call(request, id);
    ASSERT_TRUE(answer.is_ok());
    EXPECT_EQ(answer->code(), code) << answer->error_message();
    EXPECT_NE(answer->error_message().find(message), std::string::npos) << answer->error_message();
  };
  uint64_t id = c.next_id();
  expect(make_encode(id, c.session(), {}, 0), id, StatusCode::kInvalidArgument, "no images");
  id = c.next_id();
  expect(make_encode(id, c.session(), {a, a}, 2), id, StatusCode::kInvalidArgument, "top_k 2");
  id = c.next_id();
  expect(make_encode(id, c.session(), {a, tall}, 1), id, StatusCode::kInvalidArgument, "one size");
  id = c.next_id();
  expect(make_encode(id, c.session(), {a, a}, 1, "mast3r"), id, StatusCode::kInvalidArgument,
         "EncodeRetrieval needs a retrieval model");
  id = c.next_id();
  expect(make_infer_pair(id, c.session(), a, a, InferArgs{"retrieval"}), id, StatusCode::kInvalidArgument,
         "is a retrieval model");
}

// A retrieval head loaded at run time from the model repository: its model.conf gives the kind and
// the backbone, the highest version directory wins, and the head then serves EncodeRetrieval like
// one configured at start.
TEST(RecondRetrieval, LoadModelTakesARetrievalHeadFromTheRepository) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("recon-retrieval-repository-" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  for (const char* version : {"1", "2"}) {
    std::filesystem::create_directories(root / "head" / version);
    std::filesystem::create_symlink(kRetrievalHead, root / "head" / version / "projector.safetensors");
  }
  std::ofstream(root / "head" / "model.conf") << "kind = retrieval\nbackbone = mast3r\n";
  ServerOptions options = tiny_options();
  options.model_dir = root.string();
  auto harness = ServerHarness::start(options);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto manager = TestClient::connect(harness->dir(), "manager", false, "manager.sock");
  auto client = TestClient::connect(harness->dir(), "user");
  ASSERT_TRUE(manager.is_ok() && client.is_ok());

  const uint64_t load = (*manager)->next_id();
  auto loaded = (*manager)->call(make_load(load, "head", "head"), load, 60'000);
  ASSERT_TRUE(loaded.is_ok());
  ASSERT_EQ(loaded->type(), wire::ResponseBody::LoadModelResult) << loaded->error_message();
  const wire::ModelStatus* model = loaded->response->body_as_LoadModelResult()->model();
  EXPECT_EQ(model->state(), wire::ModelState::READY);
  EXPECT_EQ(model->kind()->str(), "retrieval");
  EXPECT_EQ(model->version(), 2u);

  const ImageArg a{{}, 0, kH, kW, 0, test_image(kH, kW, 3)};
  const ImageArg b{{}, 0, kH, kW, 0, test_image(kH, kW, 4)};
  const uint64_t id = (*client)->next_id();
  auto encoded = (*client)->call(make_encode(id, (*client)->session(), {a, b}, 1, "head"), id);
  ASSERT_TRUE(encoded.is_ok());
  ASSERT_EQ(encoded->type(), wire::ResponseBody::EncodeRetrievalResult) << encoded->error_message();
  EXPECT_EQ(encoded->response->body_as_EncodeRetrievalResult()->pairs()->size(), 2u);

  // A head whose backbone is not loaded fails to load and says why.
  std::ofstream(root / "head" / "model.conf") << "kind = retrieval\nbackbone = absent\n";
  const uint64_t orphan = (*manager)->next_id();
  auto refused = (*manager)->call(make_load(orphan, "orphan", "head"), orphan, 60'000);
  ASSERT_TRUE(refused.is_ok());
  EXPECT_EQ(refused->code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused->error_message().find("backbone model 'absent' is not loaded"), std::string::npos)
      << refused->error_message();
  std::filesystem::remove_all(root);
}

// Every kind's results count in its model's counters (GetStatus' ModelStatus, Prometheus'
// recon_model_*_total), as pairs' do: an EncodeRetrieval request and a Match request too.
TEST(RecondRetrieval, RetrievalAndMatchRequestsCountInTheirModelsCounters) {
  ServerOptions options = with_retrieval();
  options.metrics_port = 0;  // any free port
  auto harness = ServerHarness::start(options);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "counters");
  ASSERT_TRUE(client.is_ok());
  TestClient& c = **client;
  std::vector<ImageArg> images;
  for (uint32_t seed = 30; seed < 33; ++seed) images.push_back({{}, 0, kH, kW, 0, test_image(kH, kW, seed)});

  const uint64_t eid = c.next_id();
  auto encoded = c.call(make_encode(eid, c.session(), images, 0), eid);
  ASSERT_TRUE(encoded.is_ok());
  ASSERT_EQ(encoded->type(), wire::ResponseBody::EncodeRetrievalResult) << encoded->error_message();
  const uint64_t pid = c.next_id();
  auto pair = c.call(make_infer_pair(pid, c.session(), images[0], images[1]), pid);
  ASSERT_TRUE(pair.is_ok());
  ASSERT_EQ(pair->type(), wire::ResponseBody::InferPairResult) << pair->error_message();
  const uint64_t mid = c.next_id();
  auto match = c.call(make_match(mid, c.session(), handle_id(*pair)), mid);
  ASSERT_TRUE(match.is_ok());
  ASSERT_EQ(match->type(), wire::ResponseBody::MatchResult) << match->error_message();

  auto manager = TestClient::connect(harness->dir(), "manager", false, "manager.sock");
  ASSERT_TRUE(manager.is_ok());
  const uint64_t sid = (*manager)->next_id();
  auto status = (*manager)->call(make_status(sid), sid);
  ASSERT_TRUE(status.is_ok());
  const wire::StatusReport* report = status->response->body_as_StatusReport();
  ASSERT_NE(report, nullptr);
  const wire::ModelStatus* retrieval = nullptr;
  for (const wire::ModelStatus* m : *report->models()) {
    if (m->name()->str() == "retrieval") retrieval = m;
  }
  ASSERT_NE(retrieval, nullptr);
  EXPECT_EQ(retrieval->requests(), 1u);
  EXPECT_EQ(retrieval->inferences(), 3u) << "its images";
  EXPECT_EQ(retrieval->executions(), 1u);
  EXPECT_GT(retrieval->compute_us(), 0u);

  const std::string metrics = http_get(harness->server().metrics_port(), "/metrics");
  for (const char* model : {"retrieval", "match", "mast3r"}) {
    const std::string label = std::string("{model=\"") + model + "\"} 1\n";
    EXPECT_NE(metrics.find("recon_model_request_success_total" + label), std::string::npos) << model << metrics;
    EXPECT_NE(metrics.find("recon_model_execution_total" + label), std::string::npos) << model << metrics;
  }
}

}  // namespace
}  // namespace recon::daemon::testing
