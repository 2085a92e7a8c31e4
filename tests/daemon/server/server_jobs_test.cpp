// recond in-process: long jobs (StartJob, JobEvent, CancelJob) with the reconstruct job on the demo
// model (samples/, trained: its depths lie in front of the cameras) at 64x48, and on the tiny
// random model, whose points fall behind the cameras. What is checked here is the job's life:
// admission errors, events in order, one final answer with the job's tensors, a clear error for
// geometry the alignment cannot use, cancellation, a session that ends mid-job, a reload of the
// model mid-job, and another client served while a job runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "daemon/ipc/wire_convert.h"
#include "daemon/serving/jobs/reconstruct/pair_graph.h"
#include "daemon/serving/retrieval/retrieval_instance.h"
#include "gpu/models/mast3r/mast3r_engine.h"
#include "tests/daemon/server/server_harness.h"
#include "tests/daemon/server/test_client.h"
#include "tests/daemon/server/test_expect.h"

namespace recon::daemon::testing {
namespace {

constexpr uint32_t kH = kTinyHeight, kW = kTinyWidth;
const std::string kDemoModel = kGoldenDir + "/../../samples/demo-model.safetensors";

// The tests' size: the demo model's own would be 256 on the long side (slow on a CPU device).
InferArgs at_test_size() {
  InferArgs args;
  args.resolution = std::make_pair(kH, kW);
  return args;
}

ServerOptions demo_options() {
  ServerOptions o = tiny_options();
  o.models = {{"mast3r", kDemoModel}};
  return o;
}

std::vector<ImageArg> images(uint32_t count, uint32_t seed = 40) {
  std::vector<ImageArg> out;
  for (uint32_t i = 0; i < count; ++i) out.push_back({{}, 0, kH, kW, 0, test_image(kH, kW, seed + i)});
  return out;
}

// A short alignment: the plumbing, not the optimiser, is under test.
const std::vector<std::pair<std::string, std::string>> kQuick = {
    {"niter1", "20"}, {"niter2", "20"}, {"pairs_per_step", "1"}};

// Sends StartJob for a reconstruction of 4 images and waits for its first event: the job is then
// running. `id` gets its request id. Call through ASSERT_NO_FATAL_FAILURE.
void start_running_job(TestClient& c, const std::vector<std::pair<std::string, std::string>>& parameters,
                       uint64_t* id) {
  *id = c.next_id();
  ASSERT_TRUE(
      c.send_frames({make_start_job(*id, c.session(), "reconstruct", images(4), parameters, at_test_size())}).is_ok());
  auto first = c.receive(60'000);
  ASSERT_TRUE(first.is_ok());
  ASSERT_EQ(first->type(), wire::ResponseBody::JobEvent) << first->error_message();
}

// So many iterations that the job runs until it is stopped.
const std::vector<std::pair<std::string, std::string>> kEndless = {{"niter1", "100000"}, {"niter2", "100000"}};

struct JobRun {
  std::vector<std::string> stages;  // in the order their first event came
  std::vector<Answer> progress;
  std::optional<Answer> final;
};

// Reads the answers of job `id` until its final one (other answers fail the test).
JobRun read_job(TestClient& client, uint64_t id) {
  JobRun run;
  while (true) {
    auto answer = client.receive(60'000);
    if (!answer.is_ok()) {
      ADD_FAILURE() << answer.status().to_string();
      return run;
    }
    EXPECT_EQ(answer->response->request_id(), id);
    if (answer->response->final()) {
      run.final = std::move(answer).value();
      return run;
    }
    EXPECT_EQ(answer->type(), wire::ResponseBody::JobEvent);
    const std::string stage = answer->response->body_as_JobEvent()->stage()->str();
    if (run.stages.empty() || run.stages.back() != stage) run.stages.push_back(stage);
    run.progress.push_back(std::move(answer).value());
  }
}

const wire::TensorInfo* tensor(const wire::ResultHandle* handle, const std::string& name) {
  for (const wire::TensorInfo* t : *handle->tensors()) {
    if (t->name()->str() == name) return t;
  }
  return nullptr;
}

std::vector<uint64_t> shape_of(const wire::TensorInfo* t) {
  return t == nullptr ? std::vector<uint64_t>{} : std::vector<uint64_t>(t->shape()->begin(), t->shape()->end());
}

TEST(RecondJobs, ReconstructStreamsItsStagesThenAnswersItsTensors) {
  auto harness = ServerHarness::start(demo_options());
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "jobs");
  ASSERT_TRUE(client.is_ok());
  TestClient& c = **client;

  const uint64_t id = c.next_id();
  ASSERT_TRUE(
      c.send_frames({make_start_job(id, c.session(), "reconstruct", images(4), kQuick, at_test_size())}).is_ok());
  JobRun run = read_job(c, id);
  ASSERT_TRUE(run.final.has_value());
  ASSERT_EQ(run.final->type(), wire::ResponseBody::JobEvent) << run.final->error_message();
  EXPECT_EQ(run.stages, (std::vector<std::string>{"encode", "pairs", "align-coarse", "align-fine", "outputs"}));
  // The encode stage counts the 4 images and ends with its summary; the pairs stage counts the
  // complete graph's 6 pairs, ending at 6 of 6.
  const wire::JobEvent* last_encode = nullptr;
  const wire::JobEvent* last_pairs = nullptr;
  for (const Answer& a : run.progress) {
    const wire::JobEvent* e = a.response->body_as_JobEvent();
    if (e->stage()->str() == "encode") last_encode = e;
    if (e->stage()->str() == "pairs") last_pairs = e;
  }
  ASSERT_NE(last_encode, nullptr);
  EXPECT_EQ(last_encode->done(), 4u);
  EXPECT_EQ(last_encode->total(), 4u);
  ASSERT_NE(last_encode->message(), nullptr);
  EXPECT_NE(last_encode->message()->str().find("images in"), std::string::npos) << last_encode->message()->str();
  ASSERT_NE(last_pairs, nullptr);
  EXPECT_EQ(last_pairs->done(), 6u);
  EXPECT_EQ(last_pairs->total(), 6u);

  const wire::ResultHandle* handle = run.final->response->body_as_JobEvent()->result();
  ASSERT_NE(handle, nullptr);
  EXPECT_EQ(handle->model()->str(), "reconstruct");
  EXPECT_EQ(shape_of(tensor(handle, "cam_to_world")), (std::vector<uint64_t>{4, 4, 4}));
  EXPECT_EQ(shape_of(tensor(handle, "intrinsics")), (std::vector<uint64_t>{4, 3, 3}));
  EXPECT_EQ(shape_of(tensor(handle, "image_hw")), (std::vector<uint64_t>{4, 2}));
  EXPECT_EQ(shape_of(tensor(handle, "depth")), (std::vector<uint64_t>{4 * kH * kW}));
  EXPECT_EQ(shape_of(tensor(handle, "pair_matches")), (std::vector<uint64_t>{6, 3}));
  EXPECT_EQ(shape_of(tensor(handle, "loss")), (std::vector<uint64_t>{40}));

  // The poses are rigid: fetch them and check every rotation is orthonormal.
  const uint64_t fetch_id = c.next_id();
  const Id128 result_id = from_wire(handle->id());
  auto fetched = c.call(make_fetch(fetch_id, c.session(), result_id, {"cam_to_world"}, std::nullopt), fetch_id);
  ASSERT_TRUE(fetched.is_ok());
  ASSERT_EQ(fetched->type(), wire::ResponseBody::FetchResult) << fetched->error_message();
  const auto* data = fetched->response->body_as_FetchResult()->tensors()->Get(0)->data();
  ASSERT_EQ(data->size(), 4u * 16 * sizeof(float));
  const auto* m = reinterpret_cast<const float*>(data->data());
  for (int i = 0; i < 4; ++i) {
    const float* r = m + 16 * i;
    for (int a = 0; a < 3; ++a) {
      for (int b = 0; b < 3; ++b) {
        const float dot = r[4 * 0 + a] * r[4 * 0 + b] + r[4 * 1 + a] * r[4 * 1 + b] + r[4 * 2 + a] * r[4 * 2 + b];
        EXPECT_NEAR(dot, a == b ? 1.0f : 0.0f, 1e-4f) << "camera " << i;
      }
    }
    EXPECT_EQ(r[12], 0.0f);
    EXPECT_EQ(r[15], 1.0f);
  }
}

TEST(RecondJobs, PointsBehindTheCamerasFailTheJobSayingSo) {
  auto harness = ServerHarness::start();  // the tiny random model
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "jobs");
  ASSERT_TRUE(client.is_ok());
  TestClient& c = **client;
  const uint64_t id = c.next_id();
  ASSERT_TRUE(
      c.send_frames({make_start_job(id, c.session(), "reconstruct", images(3), kQuick, at_test_size())}).is_ok());
  JobRun run = read_job(c, id);
  ASSERT_TRUE(run.final.has_value());
  EXPECT_EQ(run.final->code(), StatusCode::kInvalidArgument);
  EXPECT_NE(run.final->error_message().find("in front of the camera"), std::string::npos) << run.final->error_message();
  EXPECT_EQ(run.stages, (std::vector<std::string>{"encode", "pairs"}));
}

// The job drives a DUNE-MASt3R model like the ViT-L one: images prepared at its own size (56, 14-px
// patches: 80x60 becomes 56x42), every pair of the graph run, aligned, and the scene's tensors
// answered at that size. 42 rows are no multiple of the official subsample 8: the job says which
// values fit, and runs with one of them.
TEST(RecondJobs, ReconstructRunsOnADuneModel) {
  auto harness = ServerHarness::start(tiny_options(kTinyDuneModel));
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "jobs");
  ASSERT_TRUE(client.is_ok());
  TestClient& c = **client;
  std::vector<ImageArg> dune_images;
  for (uint32_t i = 0; i < 3; ++i) dune_images.push_back({{}, 0, 80, 60, 0, test_image(80, 60, 70 + i)});
  constexpr uint32_t kRows = kTinyDuneSide * 3 / 4;  // 42

  uint64_t id = c.next_id();
  auto refused = c.call(make_start_job(id, c.session(), "reconstruct", dune_images, kQuick, {}), id);
  ASSERT_TRUE(refused.is_ok());
  EXPECT_EQ(refused->code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused->error_message().find("subsample=2, 7 or 14 divides"), std::string::npos)
      << refused->error_message();

  std::vector<std::pair<std::string, std::string>> parameters = kQuick;
  parameters.emplace_back("subsample", "7");
  id = c.next_id();
  ASSERT_TRUE(c.send_frames({make_start_job(id, c.session(), "reconstruct", dune_images, parameters, {})}).is_ok());
  JobRun run = read_job(c, id);
  ASSERT_TRUE(run.final.has_value());
  ASSERT_EQ(run.final->type(), wire::ResponseBody::JobEvent) << run.final->error_message();
  EXPECT_EQ(run.stages, (std::vector<std::string>{"encode", "pairs", "align-coarse", "align-fine", "outputs"}));
  const wire::ResultHandle* handle = run.final->response->body_as_JobEvent()->result();
  ASSERT_NE(handle, nullptr);
  EXPECT_EQ(shape_of(tensor(handle, "cam_to_world")), (std::vector<uint64_t>{3, 4, 4}));
  EXPECT_EQ(shape_of(tensor(handle, "depth")), (std::vector<uint64_t>{3 * kTinyDuneSide * kRows}));
  EXPECT_EQ(shape_of(tensor(handle, "pair_matches")), (std::vector<uint64_t>{3, 3}));
}

TEST(RecondJobs, RefusesAnUnknownJobABadParameterAndTooFewImages) {
  auto harness = ServerHarness::start();
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "jobs");
  ASSERT_TRUE(client.is_ok());
  TestClient& c = **client;

  const auto refused = [&](const std::string& job, const std::vector<ImageArg>& list,
                           const std::vector<std::pair<std::string, std::string>>& parameters) {
    const uint64_t id = c.next_id();
    auto answer = c.call(make_start_job(id, c.session(), job, list, parameters), id);
    EXPECT_TRUE(answer.is_ok());
    return answer.is_ok() ? std::make_pair(answer->code(), answer->error_message())
                          : std::make_pair(StatusCode::kOk, std::string());
  };
  auto [code, message] = refused("sculpt", images(3), {});
  EXPECT_EQ(code, StatusCode::kNotFound);
  EXPECT_NE(message.find("reconstruct"), std::string::npos) << message;  // names what exists

  std::tie(code, message) = refused("reconstruct", images(3), {{"niter1", "many"}});
  EXPECT_EQ(code, StatusCode::kInvalidArgument);
  EXPECT_NE(message.find("niter1"), std::string::npos) << message;

  std::tie(code, message) = refused("reconstruct", images(3), {{"colour", "blue"}});
  EXPECT_EQ(code, StatusCode::kInvalidArgument);
  EXPECT_NE(message.find("colour"), std::string::npos) << message;

  std::tie(code, message) = refused("reconstruct", images(3), {{"pairs", "swin-0"}});
  EXPECT_EQ(code, StatusCode::kInvalidArgument) << message;

  // A subsample that does not divide the images' sides, with the values that would.
  std::tie(code, message) = refused("reconstruct", images(3), {{"subsample", "5"}});
  EXPECT_EQ(code, StatusCode::kInvalidArgument);
  EXPECT_NE(message.find("not a multiple of subsample 5; subsample=2, 4, 8 or 16 divides every image's sides"),
            std::string::npos)
      << message;

  std::tie(code, message) = refused("reconstruct", images(1), {});
  EXPECT_EQ(code, StatusCode::kInvalidArgument);
  EXPECT_NE(message.find("at least 2"), std::string::npos) << message;

  // A retrieval graph encodes the images together: one size; and no more key images than images.
  std::vector<ImageArg> mixed = images(3);
  mixed.push_back({{}, 0, kW, kH, 0, test_image(kW, kH, 9)});  // portrait: prepared to another size
  std::tie(code, message) = refused("reconstruct", mixed, {{"pairs", "retrieval-2-2"}});
  EXPECT_EQ(code, StatusCode::kInvalidArgument);
  EXPECT_NE(message.find("encodes the images together"), std::string::npos) << message;
  std::tie(code, message) = refused("reconstruct", images(3), {{"pairs", "retrieval-5-2"}});
  EXPECT_EQ(code, StatusCode::kInvalidArgument);
  EXPECT_NE(message.find("5 key images of 3"), std::string::npos) << message;
}

// pairs=retrieval-NA-K: the retrieval head on the tiny model's encoder (the golden projector)
// chooses the pairs. The pairs stage then counts exactly the graph of the embeddings' cosine
// similarities, computed here in process from the same encoder and head. (The tiny model's random
// points fail the alignment afterwards: the job's end is another test's.)
TEST(RecondJobs, ARetrievalGraphRunsThePairsTheRetrievalHeadChooses) {
  const std::string head_path = kGoldenDir + "/retrieval/projector/model.safetensors";
  ServerOptions options = tiny_options();
  ModelSpec head_spec;
  head_spec.name = "retrieval";
  head_spec.kind = "retrieval";
  head_spec.path = head_path;
  head_spec.backbone = "mast3r";
  options.models.push_back(head_spec);
  auto harness = ServerHarness::start(options);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "jobs");
  ASSERT_TRUE(client.is_ok());
  TestClient& c = **client;

  const std::vector<ImageArg> list = images(6);
  const uint64_t id = c.next_id();
  ASSERT_TRUE(
      c.send_frames({make_start_job(id, c.session(), "reconstruct", list,
                                    {{"pairs", "retrieval-2-2"}, {"niter1", "2"}, {"niter2", "2"}}, at_test_size())})
          .is_ok());
  JobRun run = read_job(c, id);
  ASSERT_GE(run.stages.size(), 3u);
  EXPECT_EQ(run.stages[0], "encode");
  EXPECT_EQ(run.stages[1], "retrieval");
  EXPECT_EQ(run.stages[2], "pairs");
  uint64_t pairs_total = 0;
  for (const Answer& a : run.progress) {
    const wire::JobEvent* e = a.response->body_as_JobEvent();
    if (e->stage()->str() == "pairs") pairs_total = e->total();
  }

  // In process: the same encoder and head, the cosine similarities, the graph.
  auto engine = gpu::Mast3rEngine::load(harness->runtime(), kTinyModel, gpu::Precision::kF32);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  std::vector<gpu::ImageU8View> views;
  for (const ImageArg& image : list) views.push_back({image.pixels.data(), kH, kW, 0});
  auto tokens = (*engine)->encode(views);
  ASSERT_TRUE(tokens.is_ok()) << tokens.status().to_string();
  auto head = RetrievalInstance::open(harness->runtime(), head_path);
  ASSERT_TRUE(head.is_ok()) << head.status().to_string();
  auto answer = (*head)->retrieve(*tokens, 0);
  ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
  const StoredTensor& global = answer->tensors.at(0);
  ASSERT_EQ(global.name, "embeddings");
  const size_t n = list.size(), dim = static_cast<size_t>(global.shape.at(1));
  std::vector<float> embeddings(n * dim);
  ASSERT_TRUE(global.tensor.download(harness->runtime(), embeddings.data(), embeddings.size() * 4).is_ok());
  std::vector<float> similarity(n * n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      double dot = 0;
      for (size_t d = 0; d < dim; ++d) dot += double{embeddings[i * dim + d]} * embeddings[j * dim + d];
      similarity[i * n + j] = static_cast<float>(dot);
    }
  }
  auto spec = parse_pair_graph("retrieval-2-2");
  ASSERT_TRUE(spec.is_ok());
  auto expected = make_pair_graph(*spec, static_cast<uint32_t>(n), similarity);
  ASSERT_TRUE(expected.is_ok()) << expected.status().to_string();
  EXPECT_EQ(pairs_total, expected->size());
  EXPECT_LT(expected->size(), n * (n - 1) / 2);  // fewer than the complete graph's
}

TEST(RecondJobs, ARetrievalGraphWithoutARetrievalModelFailsSayingSo) {
  auto harness = ServerHarness::start();
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "jobs");
  ASSERT_TRUE(client.is_ok());
  TestClient& c = **client;
  for (const std::string& named : {std::string(), std::string("heads")}) {
    std::vector<std::pair<std::string, std::string>> parameters = {{"pairs", "retrieval-2-2"}};
    if (!named.empty()) parameters.emplace_back("retrieval_model", named);
    const uint64_t id = c.next_id();
    ASSERT_TRUE(
        c.send_frames({make_start_job(id, c.session(), "reconstruct", images(3), parameters, at_test_size())}).is_ok());
    JobRun run = read_job(c, id);
    ASSERT_TRUE(run.final.has_value());
    EXPECT_EQ(run.final->code(), StatusCode::kNotFound) << run.final->error_message();
    EXPECT_NE(run.final->error_message().find(named.empty() ? "needs a retrieval model" : "'heads'"), std::string::npos)
        << run.final->error_message();
  }
}

TEST(RecondJobs, CancelJobStopsTheJobWithCancelled) {
  auto harness = ServerHarness::start(demo_options());
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "jobs");
  ASSERT_TRUE(client.is_ok());
  TestClient& c = **client;

  // Running (its first event came) and long enough to be running when the cancel arrives.
  uint64_t id = 0;
  ASSERT_NO_FATAL_FAILURE(start_running_job(c, kEndless, &id));
  const uint64_t cancel_id = c.next_id();
  ASSERT_TRUE(c.send_frames({make_cancel_job(cancel_id, c.session(), id)}).is_ok());
  bool cancel_answered = false;
  std::optional<Answer> final;
  while (!final || !cancel_answered) {
    auto answer = c.receive(60'000);
    ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
    if (answer->response->request_id() == cancel_id) {
      ASSERT_EQ(answer->type(), wire::ResponseBody::CancelJobResult);
      EXPECT_TRUE(answer->response->body_as_CancelJobResult()->cancelled());
      cancel_answered = true;
    } else if (answer->response->final()) {
      final = std::move(answer).value();
    }
  }
  EXPECT_EQ(final->code(), StatusCode::kCancelled) << final->error_message();

  // A second cancel of the finished job cancels nothing.
  const uint64_t again = c.next_id();
  auto answer = c.call(make_cancel_job(again, c.session(), id), again);
  ASSERT_TRUE(answer.is_ok());
  ASSERT_EQ(answer->type(), wire::ResponseBody::CancelJobResult);
  EXPECT_FALSE(answer->response->body_as_CancelJobResult()->cancelled());
}

TEST(RecondJobs, AReloadOfItsModelMidJobFailsTheJobSayingSo) {
  // The job's images are encoded by the weights it started with; a reload between two of its pair
  // steps (management runs ahead of queued work) leaves the next step nothing to decode with.
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("recon-reload-job-" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  std::filesystem::create_symlink(std::filesystem::absolute(kDemoModel), root / "again.safetensors");
  ServerOptions options = demo_options();
  options.model_dir = root.string();
  auto harness = ServerHarness::start(options);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "jobs");
  auto manager = TestClient::connect(harness->dir(), "manager", false, "manager.sock");
  ASSERT_TRUE(client.is_ok() && manager.is_ok());
  TestClient& c = **client;

  const uint64_t id = c.next_id();  // 8 images: 28 pairs, one a step
  ASSERT_TRUE(
      c.send_frames({make_start_job(id, c.session(), "reconstruct", images(8), kQuick, at_test_size())}).is_ok());
  // The first pair step's event: the images are encoded by then.
  for (;;) {
    auto event = c.receive(60'000);
    ASSERT_TRUE(event.is_ok());
    ASSERT_EQ(event->type(), wire::ResponseBody::JobEvent) << event->error_message();
    if (event->response->body_as_JobEvent()->stage()->str() == "pairs") break;
  }
  const uint64_t load = (*manager)->next_id();
  auto reloaded = (*manager)->call(make_load(load, "mast3r", "again.safetensors"), load, 60'000);
  ASSERT_TRUE(reloaded.is_ok());
  ASSERT_EQ(reloaded->type(), wire::ResponseBody::LoadModelResult) << reloaded->error_message();
  JobRun run = read_job(c, id);
  ASSERT_TRUE(run.final.has_value());
  EXPECT_EQ(run.final->code(), StatusCode::kUnavailable) << run.final->error_message();
  EXPECT_NE(run.final->error_message().find("reloaded while the job ran"), std::string::npos)
      << run.final->error_message();
  std::filesystem::remove_all(root);
}

TEST(RecondJobs, AnotherClientIsServedWhileAJobRuns) {
  auto harness = ServerHarness::start(demo_options());
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto owner = TestClient::connect(harness->dir(), "job-owner");
  auto other = TestClient::connect(harness->dir(), "other");
  ASSERT_TRUE(owner.is_ok() && other.is_ok());

  // 4 images, complete graph: 6 pairs, one device step each.
  uint64_t id = 0;
  ASSERT_NO_FATAL_FAILURE(start_running_job(**owner, kQuick, &id));

  // The other client's pair is answered while the job is still in its pairs stage.
  const auto pair = images(2, 90);
  const uint64_t pair_id = (*other)->next_id();
  auto answer =
      (*other)->call(make_infer_pair(pair_id, (*other)->session(), pair[0], pair[1], at_test_size()), pair_id);
  ASSERT_TRUE(answer.is_ok());
  EXPECT_EQ(answer->type(), wire::ResponseBody::InferPairResult) << answer->error_message();
  JobRun run = read_job(**owner, id);
  ASSERT_TRUE(run.final.has_value());
  EXPECT_EQ(run.final->type(), wire::ResponseBody::JobEvent) << run.final->error_message();
  // The pair was answered before the job's pairs stage ended: a pairs event came after it.
  bool pairs_after = false;
  for (const Answer& a : run.progress) {
    const wire::JobEvent* e = a.response->body_as_JobEvent();
    pairs_after = pairs_after || (e->stage()->str() == "pairs" && e->done() < e->total());
  }
  EXPECT_TRUE(pairs_after);
}

// One client holds at most one job slot (max_jobs_per_client = 1): its second job is refused at
// once, saying why, while another client's job starts in the other slot.
TEST(RecondJobs, OneClientRunsOneJobAtATimeAndAnotherClientTakesTheOtherSlot) {
  auto harness = ServerHarness::start(demo_options());
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto owner = TestClient::connect(harness->dir(), "first");
  auto other = TestClient::connect(harness->dir(), "second");
  ASSERT_TRUE(owner.is_ok() && other.is_ok());
  uint64_t id = 0;
  ASSERT_NO_FATAL_FAILURE(start_running_job(**owner, kEndless, &id));
  const uint64_t again = (*owner)->next_id();
  auto refused = (*owner)->call(
      make_start_job(again, (*owner)->session(), "reconstruct", images(2), kQuick, at_test_size()), again);
  ASSERT_TRUE(refused.is_ok());
  EXPECT_EQ(refused->code(), StatusCode::kResourceExhausted) << refused->error_message();
  EXPECT_NE(refused->error_message().find("per client"), std::string::npos) << refused->error_message();
  uint64_t other_id = 0;
  ASSERT_NO_FATAL_FAILURE(start_running_job(**other, kEndless, &other_id));
}

TEST(RecondJobs, AJobEndsWithItsSession) {
  auto harness = ServerHarness::start(demo_options());
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "jobs");
  ASSERT_TRUE(client.is_ok());
  TestClient& c = **client;
  uint64_t id = 0;
  ASSERT_NO_FATAL_FAILURE(start_running_job(c, kEndless, &id));
  c.close_side_channel();  // the session ends

  // The daemon stops the job: two new sessions may run one each at once (both max_jobs slots are
  // free again; one client holds at most one).
  std::vector<std::unique_ptr<TestClient>> next;
  for (const char* name : {"after-1", "after-2"}) {
    auto connected = TestClient::connect(harness->dir(), name);
    ASSERT_TRUE(connected.is_ok());
    next.push_back(std::move(connected).value());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool started = false;
  while (!started && std::chrono::steady_clock::now() < deadline) {
    for (auto& who : next) {
      const uint64_t job = who->next_id();
      ASSERT_TRUE(
          who->send_frames({make_start_job(job, who->session(), "reconstruct", images(2), kQuick, at_test_size())})
              .is_ok());
    }
    int refused = 0;
    for (auto& who : next) {
      while (true) {
        auto answer = who->receive(60'000);
        ASSERT_TRUE(answer.is_ok());
        if (!answer->response->final()) continue;
        if (answer->type() != wire::ResponseBody::JobEvent) {
          EXPECT_EQ(answer->code(), StatusCode::kResourceExhausted) << answer->error_message();
          ++refused;
        }
        break;
      }
    }
    started = refused == 0;
    if (!started) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(started) << "the ended session's job still holds a slot";
}

}  // namespace
}  // namespace recon::daemon::testing
