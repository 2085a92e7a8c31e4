// recond's answers to bad input: every malformed, oversize, forbidden or impossible request gets
// a typed Error (or, for frames over ZMQ_MAXMSGSIZE, a dropped connection) and the daemon goes
// on serving everyone else.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "daemon/ipc/wire_convert.h"
#include "tests/daemon/server/server_harness.h"
#include "tests/daemon/server/test_client.h"

namespace recon::daemon::testing {
namespace {

constexpr uint32_t kH = kTinyHeight, kW = kTinyWidth;

class RecondErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options = tiny_options();
    options.limits.max_message_bytes = 1 << 20;
    harness_ = ServerHarness::start(options);
    ASSERT_TRUE(harness_->error().empty()) << harness_->error();
    auto client = TestClient::connect(harness_->dir(), "errors");
    ASSERT_TRUE(client.is_ok()) << client.status().to_string();
    client_ = std::move(client).value();
    auto region = client_->add_region(256 << 10);
    ASSERT_TRUE(region.is_ok()) << region.status().to_string();
    memory_ = std::move(region->first);
    region_ = region->second;
    const auto pixels = test_image(kH, kW, 7);
    std::memcpy(memory_->data(), pixels.data(), pixels.size());
  }

  // Sends `request` and returns the answer's code (kOk for a success body).
  StatusCode code_of(const std::vector<uint8_t>& request, uint64_t id, TestClient* client = nullptr) {
    auto answer = (client ? client : client_.get())->call(request, id, 20'000);
    if (!answer.is_ok()) {
      ADD_FAILURE() << "no answer: " << answer.status().to_string();
      return StatusCode::kInternal;
    }
    last_message_ = answer->code() == StatusCode::kOk ? "" : answer->error_message();
    return answer->code();
  }
  ImageArg good_image(uint64_t offset = 0) const { return {region_, offset, kH, kW, kW * 3, {}}; }
  Id128 infer_ok() {
    const uint64_t id = client_->next_id();
    auto answer = client_->call(make_infer_pair(id, client_->session(), good_image(), good_image()), id);
    EXPECT_TRUE(answer.is_ok() && answer->type() == wire::ResponseBody::InferPairResult);
    return answer.is_ok() ? handle_id(*answer) : Id128{};
  }

  std::unique_ptr<ServerHarness> harness_;
  std::unique_ptr<TestClient> client_;
  std::unique_ptr<TestRegion> memory_;
  Id128 region_;
  std::string last_message_;
};

TEST_F(RecondErrors, MalformedTruncatedAndMultiPartFramesAreInvalidArgument) {
  // Garbage (no error can be tied to a request id: the answer has id 0).
  ASSERT_TRUE(client_->send_frames({std::vector<uint8_t>(100, 0xab)}).is_ok());
  auto garbage = client_->receive();
  ASSERT_TRUE(garbage.is_ok());
  EXPECT_EQ(garbage->code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(garbage->response->request_id(), 0u);

  // A valid request cut short.
  auto request = make_infer_pair(5, client_->session(), good_image(), good_image());
  request.resize(request.size() / 2);
  ASSERT_TRUE(client_->send_frames({request}).is_ok());
  auto truncated = client_->receive();
  ASSERT_TRUE(truncated.is_ok());
  EXPECT_EQ(truncated->code(), StatusCode::kInvalidArgument);

  // Empty frame, and a body split over three frames.
  ASSERT_TRUE(client_->send_frames({{}}).is_ok());
  auto empty = client_->receive();
  ASSERT_TRUE(empty.is_ok());
  EXPECT_EQ(empty->code(), StatusCode::kInvalidArgument);
  const auto status = make_status(6);
  ASSERT_TRUE(client_->send_frames({status, status, status}).is_ok());
  auto parts = client_->receive();
  ASSERT_TRUE(parts.is_ok());
  EXPECT_EQ(parts->code(), StatusCode::kInvalidArgument);
  EXPECT_NE(parts->error_message().find("frame"), std::string::npos) << parts->error_message();

  // Still serving.
  EXPECT_EQ(code_of(make_status(7), 7), StatusCode::kOk);
}

TEST_F(RecondErrors, OversizeFramesDropTheConnectionAndOthersAreStillServed) {
  auto other = TestClient::connect(harness_->dir(), "other");
  ASSERT_TRUE(other.is_ok());
  ASSERT_TRUE(client_->send_frames({std::vector<uint8_t>((1 << 20) + 1, 0)}).is_ok());
  // libzmq disconnects a peer that sends a frame over ZMQ_MAXMSGSIZE: no answer comes back.
  EXPECT_FALSE(client_->receive(500).is_ok());
  const uint64_t id = (*other)->next_id();
  EXPECT_EQ(code_of(make_status(id), id, other->get()), StatusCode::kOk);
  // A large inline image under the frame limit is fine (and resized to the model's size).
  const uint64_t big = (*other)->next_id();
  std::vector<uint8_t> pixels(size_t{300} * 400 * 3, 1);
  EXPECT_EQ(code_of(make_infer_pair(big, (*other)->session(), {{}, 0, 300, 400, 0, pixels},
                                    {{}, 0, kH, kW, 0, test_image(kH, kW, 1)}),
                    big, other->get()),
            StatusCode::kOk)
      << last_message_;
}

TEST_F(RecondErrors, SessionsRegionsAndImageGeometryAreChecked) {
  const Id128 session = client_->session();
  auto id = [&] { return client_->next_id(); };
  uint64_t n;
  // No session, and a session nobody opened.
  n = id();
  EXPECT_EQ(code_of(make_infer_pair(n, Id128{}, good_image(), good_image()), n), StatusCode::kInvalidArgument);
  n = id();
  EXPECT_EQ(code_of(make_infer_pair(n, Id128{1, 2}, good_image(), good_image()), n), StatusCode::kNotFound);
  // Unknown region, and another client's region.
  n = id();
  EXPECT_EQ(code_of(make_infer_pair(n, session, {Id128{3, 4}, 0, kH, kW, kW * 3, {}}, good_image()), n),
            StatusCode::kNotFound);
  auto other = TestClient::connect(harness_->dir(), "other");
  ASSERT_TRUE(other.is_ok());
  n = (*other)->next_id();
  EXPECT_EQ(code_of(make_infer_pair(n, (*other)->session(), good_image(), good_image()), n, other->get()),
            StatusCode::kNotFound)
      << "a region id of another session must read as unknown";
  // Out of bounds, overflowing offsets, short stride, zero and huge sides.
  const uint64_t size = memory_->size();
  n = id();
  EXPECT_EQ(code_of(make_infer_pair(n, session, good_image(size - 100), good_image()), n),
            StatusCode::kInvalidArgument);
  n = id();
  EXPECT_EQ(code_of(make_infer_pair(n, session, good_image(~uint64_t{0} - 10), good_image()), n),
            StatusCode::kInvalidArgument);
  n = id();
  EXPECT_EQ(code_of(make_infer_pair(n, session, {region_, 0, kH, kW, kW * 3 - 1, {}}, good_image()), n),
            StatusCode::kInvalidArgument);
  n = id();
  EXPECT_EQ(code_of(make_infer_pair(n, session, {region_, 0, 0, kW, kW * 3, {}}, good_image()), n),
            StatusCode::kInvalidArgument);
  n = id();
  EXPECT_EQ(code_of(make_infer_pair(n, session, {region_, 0, 100000, kW, kW * 3, {}}, good_image()), n),
            StatusCode::kInvalidArgument);
  // Wrong dimensions: inline bytes that do not match, too thin for a patch, an impossible
  // resolution, one the image cannot become, unknown outputs and models.
  n = id();
  EXPECT_EQ(code_of(make_infer_pair(n, session, {{}, 0, kH, kW, 0, std::vector<uint8_t>(100)}, good_image()), n),
            StatusCode::kInvalidArgument);
  n = id();
  EXPECT_EQ(code_of(make_infer_pair(n, session, {region_, 0, 1, 300, 900, {}}, good_image()), n),
            StatusCode::kInvalidArgument)
      << "a 300x1 image is less than one patch high at the model's size";
  InferArgs bad_resolution;
  bad_resolution.resolution = std::make_pair(50u, 64u);
  n = id();
  EXPECT_EQ(code_of(make_infer_pair(n, session, good_image(), good_image(), bad_resolution), n),
            StatusCode::kInvalidArgument);
  InferArgs square;
  square.resolution = std::make_pair(64u, 64u);  // a 4:3 image never becomes square
  n = id();
  EXPECT_EQ(code_of(make_infer_pair(n, session, good_image(), good_image(), square), n), StatusCode::kInvalidArgument);
  InferArgs outputs;
  outputs.outputs = {"pts3d_1", "depth"};
  n = id();
  EXPECT_EQ(code_of(make_infer_pair(n, session, good_image(), good_image(), outputs), n), StatusCode::kInvalidArgument);
  InferArgs model;
  model.model = "nope";
  n = id();
  EXPECT_EQ(code_of(make_infer_pair(n, session, good_image(), good_image(), model), n), StatusCode::kNotFound);
  // Unsealed memfds are refused on the side channel.
  UniqueFd unsealed(::memfd_create("unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  ASSERT_EQ(::ftruncate(unsealed.get(), 65536), 0);
  auto refused = client_->regions().register_region(unsealed.get(), 65536, "unsealed");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  // RegisterRegion over ZeroMQ cannot carry the fd.
  n = id();
  EXPECT_EQ(code_of(make_simple(n, session, wire::RequestBody::RegisterRegion), n), StatusCode::kInvalidArgument);
  // And a good request still works after all that.
  EXPECT_FALSE(infer_ok().is_zero());
}

TEST_F(RecondErrors, HandlesAreBoundToTheirSessionAndFetchDestinationsAreChecked) {
  const Id128 session = client_->session();
  const Id128 handle = infer_ok();
  ASSERT_FALSE(handle.is_zero());
  uint64_t n;
  // Another session cannot see, fetch or release it.
  auto other = TestClient::connect(harness_->dir(), "other");
  ASSERT_TRUE(other.is_ok());
  n = (*other)->next_id();
  EXPECT_EQ(code_of(make_fetch(n, (*other)->session(), handle, {}, std::nullopt), n, other->get()),
            StatusCode::kNotFound);
  n = (*other)->next_id();
  EXPECT_EQ(code_of(make_release(n, (*other)->session(), {handle}), n, other->get()), StatusCode::kNotFound);
  // Bad destinations.
  n = client_->next_id();
  EXPECT_EQ(code_of(make_fetch(n, session, handle, {}, RegionDest{region_, memory_->size() - 16}), n),
            StatusCode::kInvalidArgument);
  n = client_->next_id();
  EXPECT_EQ(code_of(make_fetch(n, session, handle, {}, RegionDest{region_, memory_->size() + 1}), n),
            StatusCode::kInvalidArgument);
  n = client_->next_id();
  EXPECT_EQ(code_of(make_fetch(n, session, handle, {}, RegionDest{region_, 0, 1024}), n), StatusCode::kInvalidArgument)
      << "capacity too small";
  n = client_->next_id();
  EXPECT_EQ(code_of(make_fetch(n, session, handle, {}, RegionDest{region_, 0, 0, 100}), n),
            StatusCode::kInvalidArgument)
      << "alignment not a power of two";
  n = client_->next_id();
  EXPECT_EQ(code_of(make_fetch(n, session, handle, {}, RegionDest{Id128{9, 9}, 0}), n), StatusCode::kNotFound);
  n = client_->next_id();
  EXPECT_EQ(code_of(make_fetch(n, session, handle, {"pts3d_1", "pts3d_9"}, std::nullopt), n),
            StatusCode::kInvalidArgument);
  n = client_->next_id();
  EXPECT_EQ(code_of(make_fetch(n, session, handle, {"conf_1", "conf_1"}, std::nullopt), n),
            StatusCode::kInvalidArgument);
  // Release, then everything on it is NOT_FOUND, including a second release.
  n = client_->next_id();
  EXPECT_EQ(code_of(make_release(n, session, {handle}), n), StatusCode::kOk);
  n = client_->next_id();
  EXPECT_EQ(code_of(make_release(n, session, {handle}), n), StatusCode::kNotFound);
  n = client_->next_id();
  EXPECT_EQ(code_of(make_fetch(n, session, handle, {}, std::nullopt), n), StatusCode::kNotFound);
}

TEST_F(RecondErrors, ManagementIsRefusedOnTheClientSocketAndForStrangers) {
  uint64_t n = client_->next_id();
  EXPECT_EQ(code_of(make_warmup(n), n), StatusCode::kPermissionDenied);
  n = client_->next_id();
  EXPECT_EQ(code_of(make_unload(n, "mast3r"), n), StatusCode::kPermissionDenied);
  n = client_->next_id();
  EXPECT_EQ(code_of(make_load(n, "x", "x.safetensors"), n), StatusCode::kPermissionDenied);
  n = client_->next_id();
  EXPECT_EQ(code_of(make_status(n, /*include_sessions=*/true), n), StatusCode::kPermissionDenied);
  // Empty InferBatch and Match bodies are refused (server_batch_test.cpp has the details; a Match
  // without its source handle is refused naming the field, server_absent_fields_test.cpp).
  n = client_->next_id();
  EXPECT_EQ(code_of(make_simple(n, client_->session(), wire::RequestBody::InferBatch), n),
            StatusCode::kInvalidArgument);
  n = client_->next_id();
  EXPECT_EQ(code_of(make_simple(n, client_->session(), wire::RequestBody::Match), n), StatusCode::kInvalidArgument);
  // The manager socket serves management (we are root or the daemon's own user here).
  auto manager = TestClient::connect(harness_->dir(), "manager", false, "manager.sock");
  ASSERT_TRUE(manager.is_ok());
  n = (*manager)->next_id();
  EXPECT_EQ(code_of(make_status(n, true), n, manager->get()), StatusCode::kOk);
  n = (*manager)->next_id();
  EXPECT_EQ(code_of(make_warmup(n, {{48, 64}}), n, manager->get()), StatusCode::kOk) << last_message_;
  n = (*manager)->next_id();
  EXPECT_EQ(code_of(make_infer_pair(n, client_->session(), good_image(), good_image()), n, manager->get()),
            StatusCode::kInvalidArgument)
      << "inference is not served on the manager socket";
  n = (*manager)->next_id();
  EXPECT_EQ(code_of(make_load(n, "second", "../x"), n, manager->get()), StatusCode::kInvalidArgument);

  // Another uid is refused even though the socket file lets it connect.
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to act as another uid";
  ::chmod(harness_->dir().c_str(), 0755);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(10);
    auto stranger = TestClient::connect(harness_->dir(), "stranger", false, "manager.sock");
    if (!stranger.is_ok()) ::_exit(11);
    auto answer = (*stranger)->call(make_warmup(1), 1, 10'000);
    if (!answer.is_ok()) ::_exit(12);
    ::_exit(answer->code() == StatusCode::kPermissionDenied ? 0 : 13);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1x: setup failed; 13: the stranger was not refused";
}

TEST(RecondLimits, FullQueueAndHandleQuotaAreResourceExhausted) {
  ServerOptions options = tiny_options();
  options.limits.max_queue = 2;
  options.limits.max_handles_per_client = 3;
  // Hold the worker in the first batch until the queue has been overfilled.
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  ServerHooks hooks;
  hooks.before_batch = [&] {
    std::unique_lock lock(mutex);
    cv.wait_for(lock, std::chrono::seconds(30), [&] { return open; });
  };
  auto harness = ServerHarness::start(options, hooks);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "limits");
  ASSERT_TRUE(client.is_ok());
  const auto pixels = test_image(kH, kW, 8);
  const ImageArg image{{}, 0, kH, kW, 0, pixels};
  // 1 runs (held at the gate), then 2 queue, then the 4th is refused.
  ASSERT_TRUE((*client)->send_frames({make_infer_pair(100, (*client)->session(), image, image)}).is_ok());
  ASSERT_TRUE(wait_for_status(**client, [](const wire::StatusReport& r) { return r.queue()->in_flight() == 1; }));
  for (int i = 1; i < 3; ++i) {
    ASSERT_TRUE((*client)->send_frames({make_infer_pair(100 + i, (*client)->session(), image, image)}).is_ok());
  }
  ASSERT_TRUE(wait_for_status(**client, [](const wire::StatusReport& r) { return r.queue()->pending() == 2; }));
  auto full = (*client)->call(make_infer_pair(200, (*client)->session(), image, image), 200);
  ASSERT_TRUE(full.is_ok());
  EXPECT_EQ(full->code(), StatusCode::kResourceExhausted) << full->error_message();
  EXPECT_GT(full->response->body_as_Error()->retry_after_ms(), 0u);
  {
    std::lock_guard lock(mutex);
    open = true;
  }
  cv.notify_all();
  std::vector<Id128> handles;
  for (int i = 0; i < 3; ++i) {
    auto answer = (*client)->receive();
    ASSERT_TRUE(answer.is_ok());
    ASSERT_EQ(answer->type(), wire::ResponseBody::InferPairResult) << answer->error_message();
    handles.push_back(handle_id(*answer));
  }
  // Three handles held: the quota is reached.
  auto quota = (*client)->call(make_infer_pair(300, (*client)->session(), image, image), 300);
  ASSERT_TRUE(quota.is_ok());
  EXPECT_EQ(quota->code(), StatusCode::kResourceExhausted) << quota->error_message();
  // Releasing one makes room again.
  auto released = (*client)->call(make_release(301, (*client)->session(), {handles[0]}), 301);
  ASSERT_TRUE(released.is_ok());
  EXPECT_EQ(released->code(), StatusCode::kOk);
  auto again = (*client)->call(make_infer_pair(302, (*client)->session(), image, image), 302);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->code(), StatusCode::kOk) << again->error_message();
}

}  // namespace
}  // namespace recon::daemon::testing
