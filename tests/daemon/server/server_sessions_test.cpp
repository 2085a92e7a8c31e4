// recond in-process: session ends (a client SIGKILLed mid-request), status and Prometheus
// metrics, management at run time (a reload in place included), and device out-of-memory that
// fails only its request.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "daemon/ipc/wire_convert.h"
#include "tests/daemon/server/server_harness.h"
#include "tests/daemon/server/test_client.h"
#include "tests/daemon/server/worker_gate.h"

namespace recon::daemon::testing {
namespace {

constexpr uint32_t kH = kTinyHeight, kW = kTinyWidth;

TEST(RecondSessions, AClientKilledMidRequestHasItsResourcesFreedAndOthersAreServed) {
  WorkerGate gate;
  ServerHooks hooks;
  hooks.before_batch = [&] { gate.wait(); };
  auto harness = ServerHarness::start(tiny_options(), hooks);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto observer = TestClient::connect(harness->dir(), "observer");
  ASSERT_TRUE(observer.is_ok());

  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The victim: a session, a region, three requests (one will run, two wait), then it hangs.
    ::close(ready[0]);
    auto victim = TestClient::connect(harness->dir(), "victim");
    if (!victim.is_ok()) ::_exit(1);
    auto region = (*victim)->add_region(64 << 10);
    if (!region.is_ok()) ::_exit(2);
    const auto pixels = test_image(kH, kW, 9);
    std::memcpy(region->first->data(), pixels.data(), pixels.size());
    const ImageArg image{region->second, 0, kH, kW, kW * 3, {}};
    for (uint64_t id = 1; id <= 3; ++id) {
      if (!(*victim)->send_frames({make_infer_pair(id, (*victim)->session(), image, image)}).is_ok()) ::_exit(3);
    }
    if (::write(ready[1], "x", 1) != 1) ::_exit(4);
    while (true) ::pause();
  }
  ::close(ready[1]);
  pollfd p{ready[0], POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 30'000), 1) << "the child client did not start";
  ::close(ready[0]);

  // One request of the victim is in flight (held at the gate), two are queued.
  ASSERT_TRUE(wait_for_status(**observer, [](const wire::StatusReport& r) {
    return r.sessions_open() == 2 && r.queue()->in_flight() == 1 && r.queue()->pending() == 2 && r.region_bytes() > 0;
  }));
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);

  // Its session and queued requests go at once; its region stays mapped only while the running
  // request still reads it.
  EXPECT_TRUE(wait_for_status(**observer, [](const wire::StatusReport& r) {
    return r.sessions_open() == 1 && r.queue()->pending() == 0;
  })) << "the killed client's session or queued requests were not freed";
  gate.release();
  EXPECT_TRUE(wait_for_status(**observer, [](const wire::StatusReport& r) {
    return r.region_bytes() == 0 && r.queue()->in_flight() == 0 && r.devices()->Get(0)->result_bytes() == 0;
  })) << "the killed client's region or result outlived its last request";

  // Others are served as before.
  const auto pixels = test_image(kH, kW, 10);
  const uint64_t id = (*observer)->next_id();
  auto answer = (*observer)->call(
      make_infer_pair(id, (*observer)->session(), {{}, 0, kH, kW, 0, pixels}, {{}, 0, kH, kW, 0, pixels}), id);
  ASSERT_TRUE(answer.is_ok());
  EXPECT_EQ(answer->type(), wire::ResponseBody::InferPairResult) << answer->error_message();
}

TEST(RecondSessions, AnswersUnavailableWhileWarmingUpAndServesStatus) {
  WorkerGate gate;
  ServerHooks hooks;
  hooks.before_startup = [&] { gate.wait(); };
  auto harness = ServerHarness::launch(tiny_options(), hooks);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  const std::string dir = harness->dir();
  auto client = TestClient::connect(dir, "early");
  ASSERT_TRUE(client.is_ok()) << client.status().to_string();
  const auto pixels = test_image(kH, kW, 16);
  const uint64_t id = (*client)->next_id();
  auto early = (*client)->call(
      make_infer_pair(id, (*client)->session(), {{}, 0, kH, kW, 0, pixels}, {{}, 0, kH, kW, 0, pixels}), id);
  ASSERT_TRUE(early.is_ok());
  EXPECT_EQ(early->code(), StatusCode::kUnavailable) << early->error_message();
  EXPECT_GT(early->response->body_as_Error()->retry_after_ms(), 0u);
  const uint64_t sid = (*client)->next_id();
  auto status = (*client)->call(make_status(sid), sid);
  ASSERT_TRUE(status.is_ok());
  EXPECT_EQ(status->response->body_as_StatusReport()->state(), wire::DaemonState::WARMING);
  gate.release();
  harness->wait_ready();
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  const uint64_t late = (*client)->next_id();
  auto ready = (*client)->call(
      make_infer_pair(late, (*client)->session(), {{}, 0, kH, kW, 0, pixels}, {{}, 0, kH, kW, 0, pixels}), late);
  ASSERT_TRUE(ready.is_ok());
  EXPECT_EQ(ready->code(), StatusCode::kOk) << ready->error_message();
}

// Opens a session over the client's ZeroMQ connection (tcp) and makes it the client's.
void open_remote_session(TestClient& client, Id128* session) {
  const uint64_t open = client.next_id();
  auto opened = client.call(make_simple(open, Id128{}, wire::RequestBody::OpenSession), open);
  ASSERT_TRUE(opened.is_ok());
  ASSERT_EQ(opened->type(), wire::ResponseBody::SessionOpened) << opened->error_message();
  *session = from_wire(opened->response->body_as_SessionOpened()->session());
  client.set_session(*session);
}

TEST(RecondSessions, RemoteClientsOverTcpOpenASessionAndUseInlineImages) {
  ServerOptions options = tiny_options();
  options.tcp_endpoint = "tcp://127.0.0.1:*";
  // The idle clock restarts at each request and at each answer, so a slow inference (seconds on a
  // loaded CI machine, pipelines included) does not expire the session before its fetch.
  options.limits.remote_session_idle = std::chrono::milliseconds(1000);
  auto harness = ServerHarness::start(options);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  const std::string endpoint = harness->server().tcp_endpoint();
  ASSERT_EQ(endpoint.rfind("tcp://127.0.0.1:", 0), 0u) << endpoint;
  auto remote = TestClient::connect(harness->dir(), "remote", false, endpoint);
  ASSERT_TRUE(remote.is_ok());
  Id128 session;
  ASSERT_NO_FATAL_FAILURE(open_remote_session(**remote, &session));
  const auto pixels = test_image(kH, kW, 17);
  const uint64_t id = (*remote)->next_id();
  auto answer =
      (*remote)->call(make_infer_pair(id, session, {{}, 0, kH, kW, 0, pixels}, {{}, 0, kH, kW, 0, pixels}), id);
  ASSERT_TRUE(answer.is_ok());
  ASSERT_EQ(answer->type(), wire::ResponseBody::InferPairResult) << answer->error_message();
  const uint64_t fid = (*remote)->next_id();
  auto fetched = (*remote)->call(make_fetch(fid, session, handle_id(*answer), {"conf_1"}, std::nullopt), fid);
  ASSERT_TRUE(fetched.is_ok());
  ASSERT_EQ(fetched->type(), wire::ResponseBody::FetchResult) << fetched->error_message();
  EXPECT_EQ(fetched->response->body_as_FetchResult()->tensors()->Get(0)->data()->size(), size_t{kH} * kW * 4);
  // Management is never served to tcp peers; region images need a local session.
  const uint64_t warm = (*remote)->next_id();
  auto refused = (*remote)->call(make_warmup(warm), warm);
  ASSERT_TRUE(refused.is_ok());
  EXPECT_EQ(refused->code(), StatusCode::kPermissionDenied);
  // Idle for longer than remote_session_idle: the session and its handle are gone.
  std::this_thread::sleep_for(std::chrono::milliseconds(2200));
  const uint64_t after = (*remote)->next_id();
  auto expired = (*remote)->call(make_fetch(after, session, handle_id(*answer), {}, std::nullopt), after);
  ASSERT_TRUE(expired.is_ok());
  EXPECT_EQ(expired->code(), StatusCode::kNotFound);
}

TEST(RecondSessions, ARemoteSessionIsNotIdleWhileItsRequestIsInFlight) {
  // The worker holds the inference three idle periods long; the session must outlive it, and its
  // idle clock restarts at the answer, so the fetch that follows finds the handle. (An idle period
  // of a second leaves a loaded CI machine time to send the fetch after the answer.)
  WorkerGate gate;
  ServerHooks hooks;
  hooks.before_batch = [&] { gate.wait(); };
  ServerOptions options = tiny_options();
  options.tcp_endpoint = "tcp://127.0.0.1:*";
  options.limits.remote_session_idle = std::chrono::milliseconds(1000);
  auto harness = ServerHarness::start(options, hooks);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto remote = TestClient::connect(harness->dir(), "remote", false, harness->server().tcp_endpoint());
  ASSERT_TRUE(remote.is_ok());
  Id128 session;
  ASSERT_NO_FATAL_FAILURE(open_remote_session(**remote, &session));
  const auto pixels = test_image(kH, kW, 23);
  const uint64_t id = (*remote)->next_id();
  ASSERT_TRUE((*remote)
                  ->send_frames({make_infer_pair(id, session, {{}, 0, kH, kW, 0, pixels}, {{}, 0, kH, kW, 0, pixels})})
                  .is_ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  gate.release();
  auto answer = (*remote)->receive();
  ASSERT_TRUE(answer.is_ok());
  ASSERT_EQ(answer->type(), wire::ResponseBody::InferPairResult) << answer->error_message();
  const uint64_t fid = (*remote)->next_id();
  auto fetched = (*remote)->call(make_fetch(fid, session, handle_id(*answer), {"conf_1"}, std::nullopt), fid);
  ASSERT_TRUE(fetched.is_ok());
  EXPECT_EQ(fetched->type(), wire::ResponseBody::FetchResult) << fetched->error_message();
}

TEST(RecondSessions, StoppingDrainsTheRequestInFlightAndRefusesQueuedAndNewOnes) {
  WorkerGate gate;
  ServerHooks hooks;
  hooks.before_batch = [&] { gate.wait(); };
  auto harness = ServerHarness::start(tiny_options(), hooks);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "drain");
  ASSERT_TRUE(client.is_ok());
  const auto pixels = test_image(kH, kW, 19);
  const ImageArg image{{}, 0, kH, kW, 0, pixels};
  ASSERT_TRUE((*client)->send_frames({make_infer_pair(1, (*client)->session(), image, image)}).is_ok());
  ASSERT_TRUE(wait_for_status(**client, [](const wire::StatusReport& r) { return r.queue()->in_flight() == 1; }));
  ASSERT_TRUE((*client)->send_frames({make_infer_pair(2, (*client)->session(), image, image)}).is_ok());
  ASSERT_TRUE(wait_for_status(**client, [](const wire::StatusReport& r) { return r.queue()->pending() == 1; }));

  harness->server().request_stop();  // as SIGTERM
  auto queued = (*client)->receive();
  ASSERT_TRUE(queued.is_ok());
  EXPECT_EQ(queued->response->request_id(), 2u);
  EXPECT_EQ(queued->code(), StatusCode::kUnavailable);
  auto refused = (*client)->call(make_infer_pair(3, (*client)->session(), image, image), 3);
  ASSERT_TRUE(refused.is_ok());
  EXPECT_EQ(refused->code(), StatusCode::kUnavailable) << "new requests while stopping";
  gate.release();
  auto drained = (*client)->receive();
  ASSERT_TRUE(drained.is_ok());
  EXPECT_EQ(drained->response->request_id(), 1u);
  EXPECT_EQ(drained->code(), StatusCode::kOk) << "the request in flight completes: " << drained->error_message();
  EXPECT_EQ(harness->stop(), 0);
}

TEST(RecondSessions, StatusAndPrometheusReportCountersLatencyAndSessions) {
  ServerOptions options = tiny_options();
  options.metrics_port = 0;  // any free port
  auto harness = ServerHarness::start(options);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "status-test");
  ASSERT_TRUE(client.is_ok());
  const auto pixels = test_image(kH, kW, 11);
  for (int i = 0; i < 5; ++i) {
    const uint64_t id = (*client)->next_id();
    auto answer = (*client)->call(
        make_infer_pair(id, (*client)->session(), {{}, 0, kH, kW, 0, pixels}, {{}, 0, kH, kW, 0, pixels}), id);
    ASSERT_TRUE(answer.is_ok() && answer->code() == StatusCode::kOk);
  }
  const uint64_t bad = (*client)->next_id();
  ASSERT_TRUE((*client)->call(make_release(bad, (*client)->session(), {Id128{5, 5}}), bad).is_ok());

  auto manager = TestClient::connect(harness->dir(), "manager", false, "manager.sock");
  ASSERT_TRUE(manager.is_ok());
  const uint64_t sid = (*manager)->next_id();
  auto status = (*manager)->call(make_status(sid, true), sid);
  ASSERT_TRUE(status.is_ok());
  const auto* r = status->response->body_as_StatusReport();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->state(), wire::DaemonState::READY);
  EXPECT_EQ(r->sessions_open(), 1u);
  ASSERT_EQ(r->devices()->size(), 1u);
  EXPECT_FALSE(r->devices()->Get(0)->name()->str().empty());
  EXPECT_GT(r->devices()->Get(0)->pool()->bytes_reserved(), 0u);
  EXPECT_GT(r->devices()->Get(0)->weight_bytes(), 0u);
  EXPECT_GT(r->devices()->Get(0)->result_bytes(), 0u);  // five handles held
  ASSERT_EQ(r->models()->size(), 1u);
  EXPECT_EQ(r->models()->Get(0)->name()->str(), "mast3r");
  EXPECT_EQ(r->models()->Get(0)->state(), wire::ModelState::READY);
  ASSERT_EQ(r->models()->Get(0)->resolutions()->size(), 1u);
  EXPECT_EQ(r->models()->Get(0)->resolutions()->Get(0)->width(), kW);
  EXPECT_EQ(r->throughput()->requests_ok(), 5u);
  EXPECT_EQ(r->throughput()->requests_failed(), 1u);
  EXPECT_EQ(r->throughput()->inferences(), 5u);
  EXPECT_EQ(r->throughput()->executions(), 5u);
  ASSERT_EQ(r->latency()->size(), 5u);
  for (const wire::LatencyStats* l : *r->latency()) {
    EXPECT_EQ(l->count(), 5u) << l->stage()->str();
    EXPECT_LE(l->p50_us(), l->p99_us());
    EXPECT_LE(l->p99_us(), l->max_us());
  }
  EXPECT_GT(r->latency()->Get(4)->p50_us(), 0u) << "total latency";
  ASSERT_NE(r->sessions(), nullptr);
  ASSERT_EQ(r->sessions()->size(), 1u);
  EXPECT_EQ(r->sessions()->Get(0)->client_name()->str(), "status-test");
  EXPECT_EQ(r->sessions()->Get(0)->handles(), 5u);
  EXPECT_EQ(r->sessions()->Get(0)->pid(), static_cast<uint32_t>(::getpid()));

  const std::string metrics = http_get(harness->server().metrics_port(), "/metrics");
  EXPECT_NE(metrics.find("HTTP/1.1 200 OK"), std::string::npos) << metrics.substr(0, 200);
  EXPECT_NE(metrics.find("\nrecon_request_success_total 6\n"), std::string::npos)
      << "5 inferences + the status request";
  EXPECT_NE(metrics.find("recon_request_failure_total{code=\"NOT_FOUND\"} 1"), std::string::npos);
  EXPECT_NE(metrics.find("\nrecon_inference_count_total 5\n"), std::string::npos);
  EXPECT_NE(metrics.find("\nrecon_result_handles 5\n"), std::string::npos);
  EXPECT_NE(metrics.find("recon_model_ready{device=\"0\",model=\"mast3r\"} 1"), std::string::npos);
  EXPECT_NE(http_get(harness->server().metrics_port(), "/other").find("404"), std::string::npos);
}

TEST(RecondManagement, UnloadAndLoadAModelAtRunTime) {
  const std::filesystem::path models = std::filesystem::path(kTinyModel).parent_path().parent_path();
  ServerOptions options = tiny_options();
  options.model_dir = models.string();
  auto harness = ServerHarness::start(options);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto manager = TestClient::connect(harness->dir(), "manager", false, "manager.sock");
  auto client = TestClient::connect(harness->dir(), "user");
  ASSERT_TRUE(manager.is_ok() && client.is_ok());
  const auto pixels = test_image(kH, kW, 12);
  const ImageArg image{{}, 0, kH, kW, 0, pixels};
  auto infer = [&](const std::string& model) {
    InferArgs args;
    args.model = model;
    const uint64_t id = (*client)->next_id();
    auto answer = (*client)->call(make_infer_pair(id, (*client)->session(), image, image, args), id);
    return answer.is_ok() ? answer->code() : StatusCode::kInternal;
  };
  const uint64_t unload = (*manager)->next_id();
  auto unloaded = (*manager)->call(make_unload(unload, "mast3r"), unload);
  ASSERT_TRUE(unloaded.is_ok());
  EXPECT_EQ(unloaded->type(), wire::ResponseBody::UnloadModelResult) << unloaded->error_message();
  EXPECT_EQ(infer(""), StatusCode::kNotFound);

  const uint64_t load = (*manager)->next_id();
  auto loaded = (*manager)->call(make_load(load, "tiny", "tiny_same/model.safetensors"), load, 60'000);
  ASSERT_TRUE(loaded.is_ok());
  ASSERT_EQ(loaded->type(), wire::ResponseBody::LoadModelResult) << loaded->error_message();
  EXPECT_EQ(loaded->response->body_as_LoadModelResult()->model()->state(), wire::ModelState::READY);
  EXPECT_EQ(infer("tiny"), StatusCode::kOk);
  const uint64_t missing = (*manager)->next_id();
  auto failed = (*manager)->call(make_load(missing, "absent", "nope.safetensors"), missing);
  ASSERT_TRUE(failed.is_ok());
  EXPECT_NE(failed->code(), StatusCode::kOk);
}

TEST(RecondManagement, LoadingALoadedModelReloadsItInPlaceWhileItsRequestsWait) {
  // A repository with a second tiny model (another decoder: other weight bytes) and a truncated one.
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("recon-reload-repository-" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  std::filesystem::create_symlink(kGoldenDir + "/tiny_mixed/model.safetensors", root / "other.safetensors");
  {
    std::ifstream in(kTinyModel, std::ios::binary);
    std::vector<char> head(4096);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(root / "truncated.safetensors", std::ios::binary).write(head.data(), in.gcount());
  }
  ServerOptions options = tiny_options();
  options.model_dir = root.string();
  auto harness = ServerHarness::start(options);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto manager = TestClient::connect(harness->dir(), "manager", false, "manager.sock");
  auto client = TestClient::connect(harness->dir(), "user");
  ASSERT_TRUE(manager.is_ok() && client.is_ok());
  const auto pixels = test_image(kH, kW, 14);
  const ImageArg image{{}, 0, kH, kW, 0, pixels};
  auto infer = [&]() -> Result<Answer> {
    const uint64_t id = (*client)->next_id();
    return (*client)->call(make_infer_pair(id, (*client)->session(), image, image, {}), id);
  };
  auto weight_bytes = [&] {
    uint64_t bytes = 0;
    wait_for_status(**client, [&](const wire::StatusReport& report) {
      for (const wire::ModelStatus* m : *report.models()) {
        if (m->name()->str() == "mast3r") bytes = m->weight_bytes();
      }
      return true;
    });
    return bytes;
  };
  auto before = infer();
  ASSERT_TRUE(before.is_ok());
  ASSERT_EQ(before->code(), StatusCode::kOk) << before->error_message();
  const uint64_t old_bytes = weight_bytes();

  // The reload goes ahead of the pairs sent right behind it; they wait for it and are answered.
  const uint64_t reload = (*manager)->next_id();
  ASSERT_TRUE((*manager)->send_frames({make_load(reload, "mast3r", "other.safetensors")}).is_ok());
  for (int i = 0; i < 3; ++i) {
    auto during = infer();
    ASSERT_TRUE(during.is_ok());
    EXPECT_EQ(during->code(), StatusCode::kOk) << "pair " << i << ": " << during->error_message();
  }
  auto reloaded = (*manager)->receive(60'000);
  ASSERT_TRUE(reloaded.is_ok()) << reloaded.status().to_string();
  ASSERT_EQ(reloaded->type(), wire::ResponseBody::LoadModelResult) << reloaded->error_message();
  EXPECT_EQ(reloaded->response->body_as_LoadModelResult()->model()->state(), wire::ModelState::READY);
  const uint64_t new_bytes = weight_bytes();
  EXPECT_NE(new_bytes, old_bytes) << "still the first weights";
  // A result of the first weights is still there.
  const uint64_t fetch = (*client)->next_id();
  auto fetched =
      (*client)->call(make_fetch(fetch, (*client)->session(), handle_id(*before), {"conf_1"}, std::nullopt), fetch);
  ASSERT_TRUE(fetched.is_ok());
  EXPECT_EQ(fetched->type(), wire::ResponseBody::FetchResult) << fetched->error_message();

  // A reload that fails leaves the loaded model serving, unchanged.
  const uint64_t bad = (*manager)->next_id();
  auto refused = (*manager)->call(make_load(bad, "mast3r", "truncated.safetensors"), bad, 60'000);
  ASSERT_TRUE(refused.is_ok());
  EXPECT_NE(refused->code(), StatusCode::kOk);
  EXPECT_NE(refused->error_message().find("keeps serving"), std::string::npos) << refused->error_message();
  auto after = infer();
  ASSERT_TRUE(after.is_ok());
  EXPECT_EQ(after->code(), StatusCode::kOk) << after->error_message();
  EXPECT_EQ(weight_bytes(), new_bytes);
  std::filesystem::remove_all(root);
}

TEST(RecondSessions, DeviceOutOfMemoryFailsOnlyThatRequest) {
  // A cap on the activation pool that the warm 64x48 graph fits in but a 2048x1536 one does not.
  ServerOptions options = tiny_options();
  gpu::RuntimeOptions runtime;
  runtime.pipeline_cache_path = "none";
  runtime.activations_cap = VkDeviceSize{256} << 20;
  runtime.block_size = VkDeviceSize{16} << 20;
  auto harness = ServerHarness::start(options, {}, runtime);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "oom");
  ASSERT_TRUE(client.is_ok());
  const auto big = test_image(1536, 2048, 13);
  InferArgs args;
  args.resolution = std::make_pair(1536u, 2048u);
  const uint64_t id = (*client)->next_id();
  auto answer = (*client)->call(
      make_infer_pair(id, (*client)->session(), {{}, 0, 1536, 2048, 0, big}, {{}, 0, 1536, 2048, 0, big}, args), id,
      120'000);
  ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
  EXPECT_EQ(answer->code(), StatusCode::kResourceExhausted) << answer->error_message();
  const auto pixels = test_image(kH, kW, 14);
  const uint64_t small = (*client)->next_id();
  auto fine = (*client)->call(
      make_infer_pair(small, (*client)->session(), {{}, 0, kH, kW, 0, pixels}, {{}, 0, kH, kW, 0, pixels}), small);
  ASSERT_TRUE(fine.is_ok());
  EXPECT_EQ(fine->code(), StatusCode::kOk) << fine->error_message();
}

}  // namespace
}  // namespace recon::daemon::testing
