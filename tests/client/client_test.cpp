// librecon against FakeDaemon: sessions, sealed regions, async inference, lazy fetches into shared
// memory, RAII release, error codes and sources, timeouts, a daemon restart, many threads, status
// and management calls.
#include "recon/client.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "fake_daemon.h"

namespace recon::client {
namespace {

using namespace std::chrono_literals;
using test::FakeDaemon;

// Polls `condition` for up to two seconds (fire-and-forget requests arrive asynchronously).
template <typename F>
bool eventually(F condition) {
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return condition();
}

struct Pair {
  ImageBuffer buffer;
  ImageView a, b;
};

// Two small images with distinct, position-dependent pixels.
Pair make_pair(Client& client, uint32_t width = 32, uint32_t height = 16) {
  Pair p;
  const uint64_t bytes = ImageBuffer::rgb_bytes(width, height);
  p.buffer = client.create_buffer(2 * bytes, "test-images");
  for (uint64_t i = 0; i < 2 * bytes; ++i) p.buffer.data()[i] = static_cast<uint8_t>((i * 13 + i / 97) % 256);
  p.a = p.buffer.view(0, width, height);
  p.b = p.buffer.view(bytes, width, height);
  return p;
}

void expect_tensor_matches(const TensorView& view, const uint8_t* rgb, uint32_t width, uint32_t height) {
  const auto values = view.as<float>();
  const int channels = view.shape().size() == 3 ? static_cast<int>(view.shape()[2]) : 1;
  ASSERT_EQ(values.size(), size_t{width} * height * static_cast<size_t>(channels));
  for (uint32_t y = 0; y < height; ++y) {
    for (uint32_t x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        const float want = FakeDaemon::expected_value(view.name(), static_cast<int>(x), static_cast<int>(y), c,
                                                      rgb + (size_t{y} * width + x) * 3);
        ASSERT_EQ(values[(size_t{y} * width + x) * static_cast<size_t>(channels) + static_cast<size_t>(c)], want)
            << view.name() << " at " << x << "," << y << "," << c;
      }
    }
  }
}

TEST(Client, ConnectFailsAsUnavailableWhenNoDaemonListens) {
  try {
    Client::connect(ConnectOptions::in_directory("/nonexistent/recon-test"));
    FAIL() << "connected to nothing";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_EQ(e.source(), ErrorSource::kConnection);
    EXPECT_TRUE(e.daemon_unavailable());
    EXPECT_NE(std::string(e.what()).find("regions.sock"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Client::connect_control(ConnectOptions::in_directory("/nonexistent/recon-test")), Error);
}

TEST(Client, OpensOneSessionNamedAfterTheClientAndClosesItWhenDestroyed) {
  FakeDaemon daemon;
  {
    Client client = Client::connect(daemon.connect_options());
    EXPECT_TRUE(client.has_session());
    EXPECT_EQ(client.session().server_version, "fake-recond 0.1.0");
    EXPECT_EQ(client.session().max_regions, 64u);
    EXPECT_TRUE(eventually([&] { return daemon.counters().sessions_open == 1; }));
    EXPECT_EQ(daemon.counters().last_client_name, "fake-daemon-test");
  }
  EXPECT_TRUE(eventually([&] { return daemon.counters().sessions_open == 0; }));
}

TEST(Client, SocketDirectoryEnvironmentVariableSetsTheDefaults) {
  ::setenv("RECON_SOCKET_DIR", "/somewhere", 1);
  const ConnectOptions options = ConnectOptions{}.resolved();
  ::unsetenv("RECON_SOCKET_DIR");
  EXPECT_EQ(options.client_socket, "/somewhere/client.sock");
  EXPECT_EQ(options.regions_socket, "/somewhere/regions.sock");
  EXPECT_EQ(options.manager_socket, "/somewhere/manager.sock");
  EXPECT_EQ(ConnectOptions{}.resolved().client_socket, "/run/recon/client.sock");
}

TEST(ImageBuffer, IsASealedMemfdRegisteredOnceAndUnregisteredWhenDestroyed) {
  FakeDaemon daemon;
  Client client = Client::connect(daemon.connect_options());
  {
    ImageBuffer buffer = client.create_buffer(1000, "seals");
    EXPECT_EQ(buffer.size() % 4096, 0u);
    EXPECT_GE(buffer.size(), 1000u);
    EXPECT_EQ(buffer.label(), "seals");
    const uint32_t seals = daemon.counters().last_region_seals;
    EXPECT_TRUE(seals & F_SEAL_SHRINK);
    EXPECT_TRUE(seals & F_SEAL_GROW);
    EXPECT_FALSE(seals & F_SEAL_WRITE) << "the daemon maps regions read-write";
    EXPECT_EQ(daemon.counters().regions_registered, 1);
  }
  EXPECT_EQ(daemon.counters().regions_unregistered, 1);
}

TEST(ImageBuffer, RefusesImagesThatDoNotFit) {
  FakeDaemon daemon;
  Client client = Client::connect(daemon.connect_options());
  ImageBuffer buffer = client.create_buffer(4096, "small");
  EXPECT_NO_THROW(buffer.view(0, 32, 42));         // 32*3*42 = 4032 bytes
  EXPECT_THROW(buffer.view(0, 32, 43), Error);     // 4128 bytes
  EXPECT_THROW(buffer.view(100, 32, 42), Error);   // ends past 4096
  EXPECT_THROW(buffer.view(0, 32, 4, 64), Error);  // stride < width * 3
  EXPECT_THROW(buffer.view(0, 0, 4), Error);
  std::vector<uint8_t> pixels(size_t{40} * 3 * 4, 7);
  EXPECT_THROW(buffer.write_rgb(4000, pixels.data(), 40, 4), Error);
  const ImageView v = buffer.write_rgb(0, pixels.data(), 40, 4);
  EXPECT_EQ(v.stride(), 120u);
  EXPECT_EQ(buffer.data()[0], 7);
}

TEST(Result, DescribesEveryTensorWithoutFetchingAndFetchesLazilyIntoSharedMemory) {
  FakeDaemon daemon;
  Client client = Client::connect(daemon.connect_options());
  Pair pair = make_pair(client);
  PendingResult pending = client.infer(pair.a, pair.b);
  Result result = pending.get();
  EXPECT_FALSE(pending.valid());
  EXPECT_EQ(result.model(), "mast3r");
  ASSERT_EQ(result.tensors().size(), 8u);
  const TensorInfo* desc = result.find("desc_2");
  ASSERT_NE(desc, nullptr);
  EXPECT_EQ(desc->shape, (std::vector<uint64_t>{16, 32, 24}));
  EXPECT_EQ(desc->byte_size, 16u * 32 * 24 * 4);
  EXPECT_EQ(result.timings().compute, 3ms);
  EXPECT_EQ(result.ttl(), 300s);
  EXPECT_GT(result.round_trip().count(), 0);
  EXPECT_EQ(daemon.counters().fetches, 0) << "nothing is fetched before it is asked for";

  const TensorView pts = result.tensor("pts3d_1");
  EXPECT_EQ(daemon.counters().fetches, 1);
  EXPECT_EQ(daemon.counters().last_fetch_names, std::vector<std::string>{"pts3d_1"});
  expect_tensor_matches(pts, pair.buffer.data(), 32, 16);
  const TensorView again = result.tensor("pts3d_1");
  EXPECT_EQ(again.bytes().data(), pts.bytes().data()) << "a fetched tensor is not fetched twice";
  EXPECT_EQ(daemon.counters().fetches, 1);

  const TensorView conf2 = result.tensor("conf_2");
  expect_tensor_matches(conf2, pair.buffer.data() + ImageBuffer::rgb_bytes(32, 16), 32, 16);
  EXPECT_EQ(result.fetched_bytes(), pts.bytes().size() + conf2.bytes().size());
}

TEST(Result, FetchesEverythingInOneRoundTrip) {
  FakeDaemon daemon;
  Client client = Client::connect(daemon.connect_options());
  Pair pair = make_pair(client);
  Result result = client.infer(pair.a, pair.b).get();
  result.fetch();
  EXPECT_EQ(daemon.counters().fetches, 1);
  EXPECT_EQ(daemon.counters().last_fetch_names.size(), 8u);
  for (const TensorInfo& info : result.tensors()) {
    const TensorView view = result.tensor(info.name);
    const uint8_t* rgb = pair.buffer.data() + (info.name.back() == '2' ? ImageBuffer::rgb_bytes(32, 16) : 0);
    expect_tensor_matches(view, rgb, 32, 16);
  }
  EXPECT_EQ(daemon.counters().fetches, 1);
}

TEST(Result, ReleasesItsHandleWhenDestroyed) {
  FakeDaemon daemon;
  Client client = Client::connect(daemon.connect_options());
  Pair pair = make_pair(client);
  {
    Result result = client.infer(pair.a, pair.b).get();
    EXPECT_EQ(daemon.counters().handles_alive, 1);
  }
  EXPECT_TRUE(eventually([&] { return daemon.counters().handles_alive == 0; }));
  EXPECT_EQ(daemon.counters().releases, 1);
}

TEST(Result, FetchWithReleaseFreesTheHandleInTheSameRequest) {
  FakeDaemon daemon;
  Client client = Client::connect(daemon.connect_options());
  Pair pair = make_pair(client);
  {
    Result result = client.infer(pair.a, pair.b).get();
    result.fetch({"conf_1", "pts3d_2"}, true);
    EXPECT_TRUE(result.released());
    EXPECT_EQ(daemon.counters().handles_alive, 0);
    EXPECT_NO_THROW(result.tensor("conf_1")) << "fetched views outlive the release";
    try {
      result.tensor("desc_1");
      FAIL() << "fetched from a released handle";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    }
  }
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(daemon.counters().releases, 1) << "no second Release for a released handle";
}

TEST(Result, UnknownTensorNamesAreNotFound) {
  FakeDaemon daemon;
  Client client = Client::connect(daemon.connect_options());
  Pair pair = make_pair(client);
  Result result = client.infer(pair.a, pair.b).get();
  try {
    result.tensor("depth");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_EQ(e.source(), ErrorSource::kClient);
    EXPECT_NE(e.message().find("pts3d_1"), std::string::npos) << "lists the known names: " << e.message();
  }
}

TEST(TensorView, ChecksTheElementTypeAndConvertsToFloat) {
  FakeDaemon daemon;
  Client client = Client::connect(daemon.connect_options());
  Pair pair = make_pair(client);
  Result result = client.infer(pair.a, pair.b).get();
  const TensorView conf = result.tensor("conf_1");
  EXPECT_EQ(conf.dtype(), DType::kF32);
  EXPECT_THROW(conf.as<uint16_t>(), Error);
  EXPECT_THROW(conf.as<int32_t>(), Error);
  const std::vector<float> copy = conf.to_float();
  ASSERT_EQ(copy.size(), conf.elements());
  EXPECT_EQ(copy[5], conf.as<float>()[5]);
}

TEST(PendingResult, DroppedBeforeTheAnswerReleasesTheHandleThatArrivesLater) {
  FakeDaemon daemon;
  daemon.set_infer_delay(100ms);
  Client client = Client::connect(daemon.connect_options());
  Pair pair = make_pair(client);
  { PendingResult dropped = client.infer(pair.a, pair.b); }
  EXPECT_TRUE(eventually([&] { return daemon.counters().infers == 1 && daemon.counters().releases == 1; }));
  EXPECT_EQ(daemon.counters().handles_alive, 0);
}

TEST(PendingResult, IsReadyOnlyOnceTheAnswerArrived) {
  FakeDaemon daemon;
  daemon.set_infer_delay(150ms);
  Client client = Client::connect(daemon.connect_options());
  Pair pair = make_pair(client);
  PendingResult pending = client.infer(pair.a, pair.b);
  EXPECT_FALSE(pending.ready());
  EXPECT_FALSE(pending.wait_for(10ms));
  EXPECT_TRUE(pending.wait_for(5s));
  EXPECT_TRUE(pending.ready());
  EXPECT_NO_THROW(pending.get());
  EXPECT_THROW(pending.get(), Error) << "get() is callable once";
}

TEST(Client, DaemonErrorsKeepTheirCodeMessageAndRetryHint) {
  FakeDaemon daemon;
  Client client = Client::connect(daemon.connect_options());
  Pair pair = make_pair(client);
  daemon.fail_next(wire::ErrorCode::RESOURCE_EXHAUSTED, "queue is full (256 requests)", 50);
  try {
    client.infer(pair.a, pair.b).get();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
    EXPECT_EQ(e.source(), ErrorSource::kDaemon);
    EXPECT_EQ(e.message(), "queue is full (256 requests)");
    EXPECT_EQ(std::string(e.what()), "RESOURCE_EXHAUSTED: queue is full (256 requests)");
    EXPECT_EQ(e.retry_after(), 50ms);
    EXPECT_FALSE(e.daemon_unavailable());
  }
  EXPECT_NO_THROW(client.infer(pair.a, pair.b).get()) << "one failed request does not break the client";
}

TEST(Client, AnAnswerWithoutItsBodyIsRefusedNotReadAndTheClientGoesOn) {
  FakeDaemon daemon;
  ConnectOptions options = daemon.connect_options();
  options.timeout = 500ms;
  Client client = Client::connect(options);
  daemon.answer_next_without_body();
  try {
    (void)client.status();
    FAIL() << "a StatusReport answer without its body was read";
  } catch (const Error& e) {
    EXPECT_TRUE(e.daemon_unavailable()) << e.what();  // unreadable answers are dropped: the call times out
  }
  EXPECT_NO_THROW((void)client.status()) << "the next answer is read as usual";
}

TEST(Client, RequestsWithoutAnAnswerTimeOutAsUnavailableAndTheirLateHandleIsReleased) {
  FakeDaemon daemon;
  Client client = Client::connect(daemon.connect_options());
  Pair pair = make_pair(client);
  daemon.set_infer_delay(1000ms);
  InferOptions options;
  options.timeout = 100ms;
  const auto start = std::chrono::steady_clock::now();
  try {
    client.infer(pair.a, pair.b, options).get();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_EQ(e.source(), ErrorSource::kConnection);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 800ms) << "the timeout, not the daemon's answer";
  EXPECT_TRUE(eventually([&] { return daemon.counters().releases == 1; })) << "the late handle is released";
}

TEST(Client, ADaemonRestartFailsPendingAndLaterRequestsAtOnce) {
  FakeDaemon daemon;
  Client client = Client::connect(daemon.connect_options());
  Pair pair = make_pair(client);
  daemon.set_swallow_infer(true);
  PendingResult pending = client.infer(pair.a, pair.b);  // timeout 10 s
  const auto start = std::chrono::steady_clock::now();
  daemon.drop_sessions();
  try {
    pending.get();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_EQ(e.source(), ErrorSource::kConnection);
    EXPECT_NE(e.message().find("closed the session"), std::string::npos) << e.message();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_THROW(client.infer(pair.a, pair.b), Error);
  EXPECT_THROW(client.status(), Error);
}

TEST(Client, CanBeUsedFromManyThreadsAtOnce) {
  FakeDaemon daemon;
  Client client = Client::connect(daemon.connect_options());
  Pair pair = make_pair(client);
  constexpr int kThreads = 6, kPerThread = 8;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        Result result = client.infer(pair.a, pair.b).get();
        const TensorView conf = result.tensor("conf_1");
        const float want = FakeDaemon::expected_value("conf_1", 0, 0, 0, pair.buffer.data());
        if (conf.as<float>()[0] == want) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads * kPerThread);
  EXPECT_TRUE(eventually([&] { return daemon.counters().handles_alive == 0; }));
}

TEST(Client, PipelinesManyRequestsOnOneConnection) {
  FakeDaemon daemon;
  daemon.set_infer_delay(100ms);
  Client client = Client::connect(daemon.connect_options());
  Pair pair = make_pair(client);
  const auto start = std::chrono::steady_clock::now();
  std::vector<PendingResult> pending;
  pending.reserve(10);
  for (int i = 0; i < 10; ++i) pending.push_back(client.infer(pair.a, pair.b));
  for (PendingResult& p : pending) p.get();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 700ms) << "10 x 100 ms answered concurrently, not in turn";
}

TEST(OutputArena, RegistersMoreSpaceForLargeResultsAndGivesItBack) {
  FakeDaemon daemon;
  ConnectOptions options = daemon.connect_options();
  options.output_chunk_bytes = 4096;  // far less than one result
  options.output_chunk_linger = std::chrono::milliseconds(0);
  Client client = Client::connect(options);
  Pair pair = make_pair(client);
  const int before = daemon.counters().regions_registered;
  {
    Result first = client.infer(pair.a, pair.b).get();
    first.fetch();
    Result second = client.infer(pair.a, pair.b).get();
    second.fetch();
    EXPECT_EQ(daemon.counters().regions_registered, before + 2);
    expect_tensor_matches(first.tensor("pts3d_1"), pair.buffer.data(), 32, 16);
    expect_tensor_matches(second.tensor("pts3d_1"), pair.buffer.data(), 32, 16);
  }
  // The first chunk stays registered for the next result; the second goes.
  EXPECT_EQ(daemon.counters().regions_unregistered, 1);
  Result third = client.infer(pair.a, pair.b).get();
  third.fetch();
  EXPECT_EQ(daemon.counters().regions_registered, before + 2) << "the kept chunk is reused";
}

// Results fetched at once each need a chunk; with the linger the further chunks stay registered
// after their results go, so the next results fetched at once register nothing.
TEST(OutputArena, FurtherChunksLingerForTheNextResultsFetchedAtOnce) {
  FakeDaemon daemon;
  ConnectOptions options = daemon.connect_options();
  options.output_chunk_bytes = 4096;  // far less than one result
  Client client = Client::connect(options);
  Pair pair = make_pair(client);
  const int before = daemon.counters().regions_registered;
  for (int round = 0; round < 3; ++round) {
    std::vector<Result> held;
    for (int k = 0; k < 3; ++k) {
      held.push_back(client.infer(pair.a, pair.b).get());
      held.back().fetch();
    }
    for (Result& r : held) expect_tensor_matches(r.tensor("pts3d_1"), pair.buffer.data(), 32, 16);
  }
  EXPECT_EQ(daemon.counters().regions_registered, before + 3) << "three chunks, registered once";
  EXPECT_EQ(daemon.counters().regions_unregistered, 0);
}

TEST(Client, StatusDescribesTheDaemon) {
  FakeDaemon daemon;
  Client client = Client::connect_control(daemon.connect_options());
  EXPECT_FALSE(client.has_session());
  const DaemonStatus status = client.status();
  EXPECT_EQ(status.server_version, "fake-recond 0.1.0");
  EXPECT_EQ(status.state, DaemonState::kReady);
  EXPECT_EQ(status.uptime, 3725s);
  ASSERT_EQ(status.devices.size(), 1u);
  EXPECT_EQ(status.devices[0].name, "FakeGPU 9000");
  EXPECT_EQ(status.devices[0].pool.bytes_in_use, uint64_t{16} << 20);
  ASSERT_EQ(status.models.size(), 1u);
  EXPECT_EQ(status.models[0].state, ModelState::kReady);
  EXPECT_EQ(status.models[0].resolutions[0], (Resolution{384, 512}));
  EXPECT_EQ(status.queue.capacity, 256u);
  EXPECT_EQ(status.latency.size(), 2u);
  EXPECT_TRUE(status.sessions.empty());
  EXPECT_EQ(daemon.counters().manager_requests, 0);
  const DaemonStatus with_sessions = client.status(true);
  EXPECT_EQ(daemon.counters().manager_requests, 1) << "session lists come from the manager socket";
}

TEST(Client, ManagementCallsUseTheManagerSocket) {
  FakeDaemon daemon;
  Client client = Client::connect_control(daemon.connect_options());
  const WarmupReport warm = client.warmup();
  EXPECT_EQ(warm.duration, 42ms);
  ASSERT_EQ(warm.models.size(), 1u);
  LoadModelRequest request;
  request.name = "second";
  request.weights = "second.safetensors";
  EXPECT_EQ(client.load_model(request).model.name, "second");
  EXPECT_EQ(daemon.counters().last_load, "second.safetensors  0 ");
  // A model directory of the repository, by default the model's name.
  LoadModelRequest head;
  head.name = "head";
  head.kind = "retrieval";
  head.version = 3;
  head.backbone = "mast3r";
  EXPECT_EQ(client.load_model(head).model.name, "head");
  EXPECT_EQ(daemon.counters().last_load, "head retrieval 3 mast3r");
  EXPECT_NO_THROW(client.unload_model("second"));
  try {
    client.unload_model("second");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
  EXPECT_EQ(daemon.counters().manager_requests, 5);
}

TEST(Client, ControlConnectionsCannotCreateBuffersOrInfer) {
  FakeDaemon daemon;
  Client client = Client::connect_control(daemon.connect_options());
  try {
    client.create_buffer(4096);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(e.source(), ErrorSource::kClient);
  }
  EXPECT_THROW(client.infer(ImageView{}, ImageView{}), Error);
}

TEST(Client, ResultsOutliveTheirClient) {
  FakeDaemon daemon;
  Result result;
  ImageBuffer buffer;
  {
    Client client = Client::connect(daemon.connect_options());
    Pair pair = make_pair(client);
    result = client.infer(pair.a, pair.b).get();
    buffer = std::move(pair.buffer);
  }
  EXPECT_NO_THROW(expect_tensor_matches(result.tensor("pts3d_1"), buffer.data(), 32, 16));
}

}  // namespace
}  // namespace recon::client
