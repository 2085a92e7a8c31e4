// recond in-process: InferBatch and Match end to end on the tiny model. Batch results must equal
// the in-process engine's infer_batch per pair, byte for byte; match results must equal the GPU
// matcher run in-process on the same descriptors. Every bad input gets its typed error, and a
// session that ends mid-batch frees everything.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "daemon/ipc/wire_convert.h"
#include "gpu/models/match/match.h"
#include "tests/daemon/server/server_harness.h"
#include "tests/daemon/server/test_client.h"
#include "tests/daemon/server/test_expect.h"
#include "tests/daemon/server/worker_gate.h"

namespace recon::daemon::testing {
namespace {

constexpr uint32_t kH = kTinyHeight, kW = kTinyWidth;

ImageArg inline_image(uint32_t seed) {
  return ImageArg{{}, 0, kH, kW, 0, test_image(kH, kW, seed)};
}

std::unique_ptr<gpu::Mast3rEngine> reference_engine(gpu::Runtime& rt) {
  auto engine = gpu::Mast3rEngine::load(rt, kTinyModel, gpu::Precision::kF32);
  EXPECT_TRUE(engine.is_ok()) << engine.status().to_string();
  return engine.is_ok() ? std::move(engine).value() : nullptr;
}

std::vector<uint8_t> download(gpu::Runtime& rt, const gpu::Tensor& t) {
  std::vector<uint8_t> bytes(t.bytes());
  EXPECT_TRUE(t.download(rt, bytes.data(), bytes.size()).is_ok());
  return bytes;
}

// Fetches every tensor of `handle` inline.
TensorBytes fetch_all(TestClient& client, const Id128& handle) {
  const uint64_t id = client.next_id();
  auto answer = client.call(make_fetch(id, client.session(), handle, {}, std::nullopt), id);
  EXPECT_TRUE(answer.is_ok());
  if (!answer.is_ok()) return {};
  EXPECT_EQ(answer->type(), wire::ResponseBody::FetchResult) << answer->error_message();
  return inline_tensors(*answer);
}

template <typename T>
std::vector<uint8_t> as_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

TEST(RecondBatch, EachPairOfABatchEqualsTheInProcessEnginesInferBatch) {
  auto harness = ServerHarness::start();
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "batch");
  ASSERT_TRUE(client.is_ok()) << client.status().to_string();
  const std::vector<ImageArg> images = {inline_image(1), inline_image(2), inline_image(3)};

  // Listed pairs, doubled by `symmetric`: (0,2), (1,0), then (2,0), (0,1).
  BatchArgs args;
  args.pairs = {{0, 2}, {1, 0}};
  args.symmetric = true;
  const uint64_t id = (*client)->next_id();
  auto answer = (*client)->call(make_infer_batch(id, (*client)->session(), images, args), id);
  ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
  ASSERT_EQ(answer->type(), wire::ResponseBody::InferBatchResult) << answer->error_message();
  EXPECT_TRUE(answer->response->final());
  const wire::InferBatchResult* result = answer->response->body_as_InferBatchResult();
  ASSERT_EQ(result->handles()->size(), 4u);
  ASSERT_EQ(result->pairs()->size(), 4u);
  EXPECT_EQ(result->first_index(), 0u);
  const std::vector<gpu::ImagePair> expected_pairs = {{0, 2}, {1, 0}, {2, 0}, {0, 1}};
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(result->pairs()->Get(k)->first(), static_cast<uint32_t>(expected_pairs[k].first));
    EXPECT_EQ(result->pairs()->Get(k)->second(), static_cast<uint32_t>(expected_pairs[k].second));
    EXPECT_EQ(result->handles()->Get(k)->tensors()->size(), 8u);
    EXPECT_EQ(result->handles()->Get(k)->timings()->batch_size(), 4u);
  }

  auto engine = reference_engine(harness->runtime());
  ASSERT_NE(engine, nullptr);
  std::vector<gpu::ImageU8View> views;
  for (const ImageArg& image : images) views.push_back({image.pixels.data(), kH, kW, 0});
  auto reference = engine->infer_batch(views, expected_pairs);
  ASSERT_TRUE(reference.is_ok()) << reference.status().to_string();
  for (size_t k = 0; k < 4; ++k) {
    const TensorBytes got = fetch_all(**client, from_wire(result->handles()->Get(k)->id()));
    const gpu::Mast3rOutputs& out = (*reference)[k].tensors;
    const std::pair<const char*, const gpu::Tensor*> want[] = {
        {"pts3d_1", &out.pts3d[0]},         {"pts3d_2", &out.pts3d[1]},        {"conf_1", &out.conf[0]},
        {"conf_2", &out.conf[1]},           {"desc_1", &out.desc[0]},          {"desc_2", &out.desc[1]},
        {"desc_conf_1", &out.desc_conf[0]}, {"desc_conf_2", &out.desc_conf[1]}};
    for (const auto& [name, tensor] : want) {
      ASSERT_EQ(got.count(name), 1u) << name;
      EXPECT_TRUE(got.at(name) == download(harness->runtime(), *tensor)) << "pair " << k << " " << name;
    }
  }
}

TEST(RecondBatch, StreamingAnswersEveryPairAndMarksOnlyTheLastFinal) {
  auto harness = ServerHarness::start();
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "stream");
  ASSERT_TRUE(client.is_ok());
  BatchArgs args;  // consecutive pairs (0,1), (1,2)
  args.stream = true;
  args.infer.outputs = {"conf_1"};
  const uint64_t id = (*client)->next_id();
  ASSERT_TRUE((*client)
                  ->send_frames({make_infer_batch(id, (*client)->session(),
                                                  {inline_image(4), inline_image(5), inline_image(6)}, args)})
                  .is_ok());
  for (uint32_t k = 0; k < 2; ++k) {
    auto answer = (*client)->receive();
    ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
    ASSERT_EQ(answer->type(), wire::ResponseBody::InferBatchResult) << answer->error_message();
    EXPECT_EQ(answer->response->request_id(), id);
    EXPECT_EQ(answer->response->final(), k == 1);
    const wire::InferBatchResult* part = answer->response->body_as_InferBatchResult();
    EXPECT_EQ(part->first_index(), k);
    ASSERT_EQ(part->handles()->size(), 1u);
    EXPECT_EQ(part->pairs()->Get(0)->first(), k);
    EXPECT_EQ(part->pairs()->Get(0)->second(), k + 1);
    ASSERT_EQ(part->handles()->Get(0)->tensors()->size(), 1u);
    EXPECT_EQ(part->handles()->Get(0)->tensors()->Get(0)->name()->str(), "conf_1");
  }
}

TEST(RecondBatch, RefusesBadBatchesWithTypedErrorsAndKeepsServing) {
  ServerOptions options = tiny_options();
  options.limits.max_batch_images = 4;
  options.limits.max_batch_pairs = 6;
  options.limits.max_handles_per_client = 5;
  auto harness = ServerHarness::start(options);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "bad-batch");
  ASSERT_TRUE(client.is_ok());
  TestClient& c = **client;
  const auto expect = [&](const std::vector<ImageArg>& images, const BatchArgs& args, StatusCode code,
                          const std::string& message) {
    const uint64_t id = c.next_id();
    auto answer = c.call(make_infer_batch(id, c.session(), images, args), id);
    ASSERT_TRUE(answer.is_ok());
    EXPECT_EQ(answer->code(), code) << answer->error_message();
    EXPECT_NE(answer->error_message().find(message), std::string::npos) << answer->error_message();
  };
  const ImageArg a = inline_image(7), b = inline_image(8);
  BatchArgs none;
  expect({}, none, StatusCode::kInvalidArgument, "no images");
  expect({a}, none, StatusCode::kInvalidArgument, "at least 2 images");
  expect({a, b, a, b, a}, none, StatusCode::kInvalidArgument, "at most 4");
  BatchArgs out_of_range;
  out_of_range.pairs = {{0, 1}, {1, 2}};
  expect({a, b}, out_of_range, StatusCode::kInvalidArgument, "pairs[1]");
  BatchArgs self;
  self.pairs = {{1, 1}};
  expect({a, b}, self, StatusCode::kInvalidArgument, "with itself");
  BatchArgs too_many;
  too_many.pairs = {{0, 1}, {1, 0}, {0, 1}, {1, 0}};
  too_many.symmetric = true;  // 8 > 6
  expect({a, b}, too_many, StatusCode::kInvalidArgument, "at most 6");
  BatchArgs over_quota;  // 6 pairs ≤ max_batch_pairs, but only 5 handles per session
  over_quota.pairs = {{0, 1}, {1, 0}, {0, 1}};
  over_quota.symmetric = true;
  expect({a, b}, over_quota, StatusCode::kResourceExhausted, "the batch needs 6 result handles");
  BatchArgs unknown_model;
  unknown_model.infer.model = "nope";
  expect({a, b}, unknown_model, StatusCode::kNotFound, "not loaded");
  BatchArgs bad_output;
  bad_output.infer.outputs = {"depth"};
  expect({a, b}, bad_output, StatusCode::kInvalidArgument, "unknown output");
  ImageArg foreign = a;
  foreign.region = Id128{7, 7};
  foreign.stride = kW * 3;
  expect({a, foreign}, none, StatusCode::kNotFound, "");
  ImageArg short_inline = a;
  short_inline.pixels.resize(10);
  expect({a, short_inline}, none, StatusCode::kInvalidArgument, "images[1]");

  // The refused batches returned their reservations: a batch at the quota runs.
  BatchArgs at_quota;
  at_quota.infer.outputs = {"conf_1"};
  const uint64_t id = c.next_id();
  auto answer = c.call(make_infer_batch(id, c.session(),
                                        {
                                            a,
                                            b,
                                            a,
                                            b,
                                        },
                                        at_quota),
                       id);
  ASSERT_TRUE(answer.is_ok());
  ASSERT_EQ(answer->type(), wire::ResponseBody::InferBatchResult) << answer->error_message();
  EXPECT_EQ(answer->response->body_as_InferBatchResult()->handles()->size(), 3u);
}

TEST(RecondBatch, ASessionThatEndsMidBatchHasEverythingFreed) {
  WorkerGate gate;
  ServerHooks hooks;
  hooks.before_batch = [&] { gate.wait(); };
  auto harness = ServerHarness::start(tiny_options(), hooks);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto observer = TestClient::connect(harness->dir(), "observer");
  auto victim = TestClient::connect(harness->dir(), "victim");
  ASSERT_TRUE(observer.is_ok() && victim.is_ok());
  auto region = (*victim)->add_region(64 << 10);
  ASSERT_TRUE(region.is_ok());
  const auto pixels = test_image(kH, kW, 9);
  for (uint32_t y = 0; y < kH; ++y) std::memcpy(region->first->data() + y * kW * 3, &pixels[y * kW * 3], kW * 3);
  const ImageArg shared{region->second, 0, kH, kW, kW * 3, {}};
  const uint64_t id = (*victim)->next_id();
  ASSERT_TRUE(
      (*victim)->send_frames({make_infer_batch(id, (*victim)->session(), {shared, inline_image(10), shared})}).is_ok());
  ASSERT_TRUE(wait_for_status(**observer, [](const wire::StatusReport& r) { return r.queue()->in_flight() == 1; }));
  (*victim)->close_side_channel();  // as when the process dies
  EXPECT_TRUE(wait_for_status(**observer, [](const wire::StatusReport& r) { return r.sessions_open() == 1; }));
  gate.release();
  EXPECT_TRUE(wait_for_status(**observer, [](const wire::StatusReport& r) {
    return r.region_bytes() == 0 && r.queue()->in_flight() == 0 && r.devices()->Get(0)->result_bytes() == 0;
  })) << "the ended session's region or results outlived its batch";
}

// In-process reference: the pair's outputs on the device, matched by the same GPU matcher.
struct ReferenceMatches {
  gpu::Mast3rResult pair;
  gpu::HostMatches matches;
};

ReferenceMatches reference_matches(gpu::Runtime& rt, const ImageArg& a, const ImageArg& b, int subsample) {
  ReferenceMatches out;
  auto engine = reference_engine(rt);
  if (engine == nullptr) return out;
  const gpu::ImageU8View va{a.pixels.data(), kH, kW, 0}, vb{b.pixels.data(), kH, kW, 0};
  auto pair = engine->infer(std::span(&va, 1), std::span(&vb, 1));
  EXPECT_TRUE(pair.is_ok()) << pair.status().to_string();
  if (!pair.is_ok()) return out;
  out.pair = std::move(pair).value();
  const gpu::Mast3rOutputs& o = out.pair.tensors;
  gpu::FastMatchOptions options;
  options.subsample = subsample;
  gpu::MatchMaps maps{o.pts3d[0], o.pts3d[1], o.desc_conf[0], o.desc_conf[1]};
  auto matched = gpu::match_fast_reciprocal(rt, o.desc[0], o.desc[1], options, maps);
  EXPECT_TRUE(matched.is_ok()) << matched.status().to_string();
  if (!matched.is_ok()) return out;
  auto host = matched->to_host(rt);
  EXPECT_TRUE(host.is_ok());
  if (host.is_ok()) out.matches = std::move(host).value();
  return out;
}

TEST(RecondMatch, MatchesAPairOnTheDeviceExactlyAsTheMatcherInProcess) {
  auto harness = ServerHarness::start();
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "match");
  ASSERT_TRUE(client.is_ok());
  TestClient& c = **client;
  const ImageArg a = inline_image(11), b = inline_image(12);
  const uint64_t id = c.next_id();
  auto pair = c.call(make_infer_pair(id, c.session(), a, b), id);
  ASSERT_TRUE(pair.is_ok());
  ASSERT_EQ(pair->type(), wire::ResponseBody::InferPairResult) << pair->error_message();
  const Id128 source = handle_id(*pair);

  const ReferenceMatches ref = reference_matches(harness->runtime(), a, b, 4);
  const gpu::HostMatches& m = ref.matches;
  ASSERT_GT(m.size(), 2u) << "the tiny model should give a few mutual matches";

  // All matches.
  const uint64_t mid = c.next_id();
  auto match = c.call(make_match(mid, c.session(), source, 0, 4), mid);
  ASSERT_TRUE(match.is_ok());
  ASSERT_EQ(match->type(), wire::ResponseBody::MatchResult) << match->error_message();
  const wire::MatchResult* result = match->response->body_as_MatchResult();
  EXPECT_EQ(result->match_count(), m.size());
  const TensorBytes got = fetch_all(c, handle_id(*match));
  EXPECT_TRUE(got.at("matches_1") == as_bytes(m.xy_a));
  EXPECT_TRUE(got.at("matches_2") == as_bytes(m.xy_b));
  EXPECT_TRUE(got.at("match_conf") == as_bytes(m.conf));
  EXPECT_TRUE(got.at("pts3d_1") == as_bytes(m.pts3d_a));
  EXPECT_TRUE(got.at("pts3d_2") == as_bytes(m.pts3d_b));
  for (const wire::TensorInfo* t : *result->handle()->tensors()) {
    EXPECT_EQ(t->shape()->Get(0), m.size()) << t->name()->str();
    EXPECT_EQ(t->dtype(),
              t->name()->str() == "matches_1" || t->name()->str() == "matches_2" ? wire::DType::I32 : wire::DType::F32);
  }

  // min_confidence keeps matches whose two pixels are both confident enough; max_matches then
  // keeps the most confident, in the matcher's order.
  std::vector<float> conf_min;
  for (size_t i = 0; i < m.size(); ++i) conf_min.push_back(std::min(m.conf_a[i], m.conf_b[i]));
  std::vector<float> sorted = conf_min;
  std::sort(sorted.begin(), sorted.end());
  const float threshold = sorted[sorted.size() / 2];
  std::vector<size_t> kept;
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.conf_a[i] >= threshold && m.conf_b[i] >= threshold) kept.push_back(i);
  }
  const uint32_t max_matches = static_cast<uint32_t>(kept.size() > 1 ? kept.size() - 1 : 1);
  std::vector<size_t> best = kept;
  std::stable_sort(best.begin(), best.end(), [&](size_t x, size_t y) { return m.conf[x] > m.conf[y]; });
  best.resize(std::min<size_t>(best.size(), max_matches));
  std::sort(best.begin(), best.end());
  std::vector<int32_t> want_xy;
  for (size_t i : best) want_xy.insert(want_xy.end(), {m.xy_a[2 * i], m.xy_a[2 * i + 1]});
  const uint64_t fid = c.next_id();
  auto filtered = c.call(make_match(fid, c.session(), source, max_matches, 4, threshold), fid);
  ASSERT_TRUE(filtered.is_ok());
  ASSERT_EQ(filtered->type(), wire::ResponseBody::MatchResult) << filtered->error_message();
  EXPECT_EQ(filtered->response->body_as_MatchResult()->match_count(), best.size());
  EXPECT_TRUE(fetch_all(c, handle_id(*filtered)).at("matches_1") == as_bytes(want_xy));

  // A threshold nobody reaches: an empty match list, still a handle with [0, 2] tensors.
  const uint64_t eid = c.next_id();
  auto empty = c.call(make_match(eid, c.session(), source, 0, 4, 1e30f), eid);
  ASSERT_TRUE(empty.is_ok());
  ASSERT_EQ(empty->type(), wire::ResponseBody::MatchResult) << empty->error_message();
  EXPECT_EQ(empty->response->body_as_MatchResult()->match_count(), 0u);
  const TensorBytes none = fetch_all(c, handle_id(*empty));
  EXPECT_TRUE(none.count("matches_1") == 1 && none.at("matches_1").empty());
}

TEST(RecondMatch, RefusesForeignReleasedAndDescriptorlessHandles) {
  auto harness = ServerHarness::start();
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "owner");
  auto other = TestClient::connect(harness->dir(), "other");
  ASSERT_TRUE(client.is_ok() && other.is_ok());
  TestClient& c = **client;
  const auto call = [&](TestClient& who, const std::vector<uint8_t>& request, uint64_t id) {
    auto answer = who.call(request, id);
    EXPECT_TRUE(answer.is_ok());
    return std::move(answer).value();
  };
  uint64_t id = c.next_id();
  const Answer pair = call(c, make_infer_pair(id, c.session(), inline_image(13), inline_image(14)), id);
  ASSERT_EQ(pair.type(), wire::ResponseBody::InferPairResult) << pair.error_message();
  InferArgs no_desc_conf;
  no_desc_conf.outputs = {"desc_1", "desc_2"};
  id = c.next_id();
  const Answer descs = call(c, make_infer_pair(id, c.session(), inline_image(13), inline_image(14), no_desc_conf), id);
  InferArgs no_desc;
  no_desc.outputs = {"pts3d_1", "conf_1"};
  id = c.next_id();
  const Answer points = call(c, make_infer_pair(id, c.session(), inline_image(13), inline_image(14), no_desc), id);

  const auto expect = [&](TestClient& who, const Id128& source, StatusCode code, const std::string& message,
                          uint32_t subsample = 0, float min_confidence = 0) {
    const uint64_t mid = who.next_id();
    const Answer answer = call(who, make_match(mid, who.session(), source, 0, subsample, min_confidence), mid);
    EXPECT_EQ(answer.code(), code) << answer.error_message();
    EXPECT_NE(answer.error_message().find(message), std::string::npos) << answer.error_message();
  };
  expect(**other, handle_id(pair), StatusCode::kNotFound, "no result handle");
  expect(c, handle_id(points), StatusCode::kInvalidArgument, "no desc_1 and desc_2");
  expect(c, handle_id(descs), StatusCode::kInvalidArgument, "needs desc_conf_1", 0, 0.5f);
  expect(c, handle_id(pair), StatusCode::kInvalidArgument, "leaves no seed", 49);
  expect(c, handle_id(pair), StatusCode::kInvalidArgument, "finite", 0, std::nanf(""));
  expect(c, Id128{}, StatusCode::kNotFound, "no result handle");

  // A match result holds no descriptors; a released handle is gone.
  uint64_t mid = c.next_id();
  const Answer match = call(c, make_match(mid, c.session(), handle_id(descs)), mid);
  ASSERT_EQ(match.type(), wire::ResponseBody::MatchResult) << match.error_message();
  expect(c, handle_id(match), StatusCode::kInvalidArgument, "no desc_1 and desc_2");
  id = c.next_id();
  ASSERT_EQ(call(c, make_release(id, c.session(), {handle_id(pair)}), id).type(), wire::ResponseBody::ReleaseResult);
  expect(c, handle_id(pair), StatusCode::kNotFound, "no result handle");
}

TEST(RecondRetrieval, EncodeRetrievalWithoutARetrievalModelIsAClearError) {
  auto harness = ServerHarness::start();
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "retrieval");
  ASSERT_TRUE(client.is_ok());
  const uint64_t id = (*client)->next_id();
  auto answer = (*client)->call(make_simple(id, (*client)->session(), wire::RequestBody::EncodeRetrieval), id);
  ASSERT_TRUE(answer.is_ok());
  EXPECT_EQ(answer->code(), StatusCode::kNotFound);
  EXPECT_NE(answer->error_message().find("model 'retrieval' is not loaded"), std::string::npos)
      << answer->error_message();
}

}  // namespace
}  // namespace recon::daemon::testing
