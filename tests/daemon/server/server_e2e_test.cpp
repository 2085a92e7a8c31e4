// recond end to end, in-process: the tiny golden model served over real sockets to the tests'
// minimal client. Results must be byte-identical to the in-process engine's.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "daemon/ipc/wire_convert.h"
#include "tests/daemon/server/server_harness.h"
#include "tests/daemon/server/test_client.h"
#include "tests/daemon/server/test_expect.h"
#include "tests/daemon/server/worker_gate.h"
#include "tools/io/official_resize.h"

namespace recon::daemon::testing {
namespace {

constexpr uint32_t kH = kTinyHeight, kW = kTinyWidth;

std::unique_ptr<gpu::Mast3rEngine> reference_engine(gpu::Runtime& rt, gpu::Precision precision = gpu::Precision::kF32) {
  auto engine = gpu::Mast3rEngine::load(rt, kTinyModel, precision);
  EXPECT_TRUE(engine.is_ok()) << engine.status().to_string();
  return engine.is_ok() ? std::move(engine).value() : nullptr;
}

// Copies packed rows into `base + offset` with `stride` bytes per row.
void write_image(uint8_t* base, uint64_t offset, const std::vector<uint8_t>& pixels, uint32_t h, uint32_t w,
                 uint32_t stride) {
  for (size_t y = 0; y < h; ++y) std::memcpy(base + offset + y * stride, pixels.data() + y * w * 3, size_t{w} * 3);
}

TEST(RecondServer, InferPairThroughASealedMemfdThenFetchMatchesTheInProcessEngine) {
  auto harness = ServerHarness::start();
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "e2e");
  ASSERT_TRUE(client.is_ok()) << client.status().to_string();
  auto region = (*client)->add_region(1 << 20);
  ASSERT_TRUE(region.is_ok()) << region.status().to_string();
  auto& [memory, region_id] = *region;

  const auto a = test_image(kH, kW, 1), b = test_image(kH, kW, 2);
  const uint32_t stride = kW * 3 + 40;  // padded rows
  write_image(memory->data(), 0, a, kH, kW, stride);
  write_image(memory->data(), 64 << 10, b, kH, kW, stride);
  const ImageArg image1{region_id, 0, kH, kW, stride, {}};
  const ImageArg image2{region_id, 64 << 10, kH, kW, stride, {}};

  const uint64_t id = (*client)->next_id();
  auto answer = (*client)->call(make_infer_pair(id, (*client)->session(), image1, image2), id);
  ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
  ASSERT_EQ(answer->type(), wire::ResponseBody::InferPairResult) << answer->error_message();
  const wire::ResultHandle* handle = answer->response->body_as_InferPairResult()->handle();
  ASSERT_NE(handle, nullptr);
  EXPECT_EQ(handle->model()->str(), "mast3r");
  EXPECT_GT(handle->ttl_ms(), 0u);
  EXPECT_GT(handle->timings()->compute_ns(), 0u);
  EXPECT_GE(handle->timings()->total_ns(), handle->timings()->compute_ns());
  EXPECT_EQ(handle->timings()->batch_size(), 1u);
  ASSERT_EQ(handle->tensors()->size(), 8u);
  std::map<std::string, std::vector<uint64_t>> shapes;
  for (const wire::TensorInfo* t : *handle->tensors()) {
    shapes[t->name()->str()] = std::vector<uint64_t>(t->shape()->begin(), t->shape()->end());
    EXPECT_EQ(t->dtype(), wire::DType::F32);
  }
  EXPECT_EQ(shapes["pts3d_1"], (std::vector<uint64_t>{kH, kW, 3}));
  EXPECT_EQ(shapes["conf_2"], (std::vector<uint64_t>{kH, kW}));
  EXPECT_EQ(shapes["desc_1"], (std::vector<uint64_t>{kH, kW, 24}));
  const Id128 result = from_wire(handle->id());

  // The same pair in-process, on the same device.
  auto engine = reference_engine(harness->runtime());
  ASSERT_NE(engine, nullptr);
  const TensorBytes expected = engine_outputs(harness->runtime(), *engine, a, b, kH, kW);
  ASSERT_EQ(expected.size(), 8u);

  // Fetch everything into the region, 256-aligned after offset 128 KiB.
  const uint64_t fid = (*client)->next_id();
  auto fetched =
      (*client)->call(make_fetch(fid, (*client)->session(), result, {}, RegionDest{region_id, 128 << 10, 0, 256}), fid);
  ASSERT_TRUE(fetched.is_ok()) << fetched.status().to_string();
  ASSERT_EQ(fetched->type(), wire::ResponseBody::FetchResult) << fetched->error_message();
  const auto* fetch_result = fetched->response->body_as_FetchResult();
  EXPECT_FALSE(fetch_result->released());
  uint64_t total = 0;
  for (const auto& [name, bytes] : expected) total += bytes.size();
  EXPECT_EQ(fetch_result->bytes_written(), total);
  for (const wire::FetchedTensor* t : *fetch_result->tensors()) EXPECT_EQ(t->offset() % 256, 0u);
  const TensorBytes in_region = region_tensors(*fetched, memory->data());
  for (const auto& [name, bytes] : expected) {
    ASSERT_TRUE(in_region.count(name)) << name;
    EXPECT_EQ(in_region.at(name), bytes) << name << " differs from the in-process engine";
  }

  // Inline fetch of two tensors, releasing the handle.
  const uint64_t iid = (*client)->next_id();
  auto inline_fetch = (*client)->call(
      make_fetch(iid, (*client)->session(), result, {"conf_1", "desc_2"}, std::nullopt, /*release=*/true), iid);
  ASSERT_TRUE(inline_fetch.is_ok());
  ASSERT_EQ(inline_fetch->type(), wire::ResponseBody::FetchResult) << inline_fetch->error_message();
  EXPECT_TRUE(inline_fetch->response->body_as_FetchResult()->released());
  const TensorBytes inline_bytes = inline_tensors(*inline_fetch);
  ASSERT_EQ(inline_bytes.size(), 2u);
  EXPECT_EQ(inline_bytes.at("conf_1"), expected.at("conf_1"));
  EXPECT_EQ(inline_bytes.at("desc_2"), expected.at("desc_2"));

  // Released: fetching again or releasing again is NOT_FOUND.
  const uint64_t again = (*client)->next_id();
  auto refetch = (*client)->call(make_fetch(again, (*client)->session(), result, {}, std::nullopt), again);
  ASSERT_TRUE(refetch.is_ok());
  EXPECT_EQ(refetch->code(), StatusCode::kNotFound);
  const uint64_t rid = (*client)->next_id();
  auto rerelease = (*client)->call(make_release(rid, (*client)->session(), {result}), rid);
  ASSERT_TRUE(rerelease.is_ok());
  EXPECT_EQ(rerelease->code(), StatusCode::kNotFound);
}

// Fetches run on the device's fetch thread and copy queue, beside the compute: a fetch is answered
// while a batch holds the worker, into a region (the GPU writing the imported pages) and inline
// (through staging) with the same bytes.
TEST(RecondServer, AFetchIsAnsweredWhileABatchHoldsTheWorker) {
  WorkerGate gate;
  std::atomic<int> batches{0};
  ServerHooks hooks;
  hooks.before_batch = [&] {
    if (batches++ > 0) gate.wait();  // the first batch runs, every later one waits
  };
  auto harness = ServerHarness::start(tiny_options(), hooks);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "fetch-beside");
  ASSERT_TRUE(client.is_ok()) << client.status().to_string();
  auto region = (*client)->add_region(1 << 20);
  ASSERT_TRUE(region.is_ok()) << region.status().to_string();
  auto& [memory, region_id] = *region;
  const auto pixels = test_image(kH, kW, 23);
  const ImageArg image{{}, 0, kH, kW, 0, pixels};

  auto first = (*client)->call(make_infer_pair(1, (*client)->session(), image, image), 1);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->type(), wire::ResponseBody::InferPairResult) << first->error_message();
  const Id128 result = handle_id(*first);
  ASSERT_TRUE((*client)->send_frames({make_infer_pair(2, (*client)->session(), image, image)}).is_ok());
  ASSERT_TRUE(wait_for_status(**client, [](const wire::StatusReport& r) { return r.queue()->in_flight() == 1; }))
      << "the second pair never reached the worker";

  auto in_region =
      (*client)->call(make_fetch(3, (*client)->session(), result, {}, RegionDest{region_id, 0, 0, 256}), 3);
  ASSERT_TRUE(in_region.is_ok()) << "no fetch answer while the worker is held: " << in_region.status().to_string();
  ASSERT_EQ(in_region->type(), wire::ResponseBody::FetchResult) << in_region->error_message();
  auto inline_fetch = (*client)->call(make_fetch(4, (*client)->session(), result, {}, std::nullopt), 4);
  ASSERT_TRUE(inline_fetch.is_ok()) << inline_fetch.status().to_string();
  ASSERT_EQ(inline_fetch->type(), wire::ResponseBody::FetchResult) << inline_fetch->error_message();
  EXPECT_TRUE(wait_for_status(**client, [](const wire::StatusReport& r) { return r.queue()->in_flight() == 1; }))
      << "the held pair finished before the fetches: they waited for it";

  const TensorBytes from_region = region_tensors(*in_region, memory->data());
  const TensorBytes from_inline = inline_tensors(*inline_fetch);
  ASSERT_EQ(from_region.size(), 8u);
  EXPECT_EQ(from_region, from_inline) << "the region (imported) and inline (staging) paths differ";

  gate.release();
  auto second = (*client)->receive();
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_EQ(second->response->request_id(), 2u);
  EXPECT_EQ(second->code(), StatusCode::kOk) << second->error_message();
}

// The fast precision (fp16 with the heads in fp16 too) served like the others: the status says
// which, and the outputs are the in-process engine's at that precision, byte for byte.
TEST(RecondServer, ServesFp16HeadsLikeTheInProcessEngine) {
  ServerOptions options = tiny_options();
  options.precision = gpu::Precision::kF16Heads;
  auto harness = ServerHarness::start(options);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "fp16-heads");
  ASSERT_TRUE(client.is_ok()) << client.status().to_string();
  const uint64_t sid = (*client)->next_id();
  auto status = (*client)->call(make_status(sid), sid);
  ASSERT_TRUE(status.is_ok());
  ASSERT_EQ(status->type(), wire::ResponseBody::StatusReport) << status->error_message();
  EXPECT_EQ(status->response->body_as_StatusReport()->models()->Get(0)->precision(), wire::Precision::FP16_HEADS);

  const auto a = test_image(kH, kW, 5), b = test_image(kH, kW, 6);
  const ImageArg image1{{}, 0, kH, kW, 0, a};
  const ImageArg image2{{}, 0, kH, kW, 0, b};
  const uint64_t id = (*client)->next_id();
  auto answer = (*client)->call(make_infer_pair(id, (*client)->session(), image1, image2), id);
  ASSERT_TRUE(answer.is_ok());
  ASSERT_EQ(answer->type(), wire::ResponseBody::InferPairResult) << answer->error_message();
  const Id128 result = from_wire(answer->response->body_as_InferPairResult()->handle()->id());
  const uint64_t fid = (*client)->next_id();
  auto fetched = (*client)->call(make_fetch(fid, (*client)->session(), result, {}, std::nullopt), fid);
  ASSERT_TRUE(fetched.is_ok());
  ASSERT_EQ(fetched->type(), wire::ResponseBody::FetchResult) << fetched->error_message();
  const TensorBytes served = inline_tensors(*fetched);

  auto engine = reference_engine(harness->runtime(), gpu::Precision::kF16Heads);
  ASSERT_NE(engine, nullptr);
  const TensorBytes expected = engine_outputs(harness->runtime(), *engine, a, b, kH, kW);
  ASSERT_EQ(expected.size(), 8u);
  for (const auto& [name, bytes] : expected) {
    ASSERT_TRUE(served.count(name)) << name;
    EXPECT_EQ(served.at(name), bytes) << name << " differs from the in-process fp16-heads engine";
  }
}

TEST(RecondServer, InlineImagesAndImagesNotAtModelSizeGiveTheOfficialResult) {
  auto harness = ServerHarness::start();
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "inline");
  ASSERT_TRUE(client.is_ok()) << client.status().to_string();
  auto engine = reference_engine(harness->runtime());
  ASSERT_NE(engine, nullptr);

  // At model size, inline.
  const auto a = test_image(kH, kW, 3), b = test_image(kH, kW, 4);
  const uint64_t id = (*client)->next_id();
  auto answer =
      (*client)->call(make_infer_pair(id, (*client)->session(), {{}, 0, kH, kW, 0, a}, {{}, 0, kH, kW, 0, b}), id);
  ASSERT_TRUE(answer.is_ok());
  ASSERT_EQ(answer->type(), wire::ResponseBody::InferPairResult) << answer->error_message();
  const uint64_t fid = (*client)->next_id();
  auto fetched =
      (*client)->call(make_fetch(fid, (*client)->session(), handle_id(*answer), {}, std::nullopt, true), fid);
  ASSERT_TRUE(fetched.is_ok());
  ASSERT_EQ(fetched->type(), wire::ResponseBody::FetchResult) << fetched->error_message();
  const TensorBytes expected = engine_outputs(harness->runtime(), *engine, a, b, kH, kW);
  EXPECT_EQ(inline_tensors(*fetched), expected);

  // 100x75 and 128x96 images: the daemon resizes them as prepare_official does (to 64x48).
  io::Image big1{100, 75, 3, test_image(75, 100, 5)}, big2{128, 96, 3, test_image(96, 128, 6)};
  auto prepared1 = io::prepare_official(big1, 64), prepared2 = io::prepare_official(big2, 64);
  ASSERT_TRUE(prepared1.is_ok() && prepared2.is_ok());
  ASSERT_EQ(prepared1->image.width, 64);
  ASSERT_EQ(prepared1->image.height, 48);
  const uint64_t rid = (*client)->next_id();
  auto resized = (*client)->call(
      make_infer_pair(rid, (*client)->session(), {{}, 0, 75, 100, 0, big1.pixels}, {{}, 0, 96, 128, 0, big2.pixels}),
      rid);
  ASSERT_TRUE(resized.is_ok());
  ASSERT_EQ(resized->type(), wire::ResponseBody::InferPairResult) << resized->error_message();
  const uint64_t rfid = (*client)->next_id();
  auto resized_fetch =
      (*client)->call(make_fetch(rfid, (*client)->session(), handle_id(*resized), {}, std::nullopt, true), rfid);
  ASSERT_TRUE(resized_fetch.is_ok());
  EXPECT_EQ(inline_tensors(*resized_fetch),
            engine_outputs(harness->runtime(), *engine, prepared1->image.pixels, prepared2->image.pixels, kH, kW));
}

TEST(RecondServer, SixteenConcurrentClientsEachGetTheirOwnResults) {
  constexpr int kClients = 16, kRequests = 8;
  // 32x16 pairs, batched up to 4 across clients: lavapipe spends ~0.3-0.4 s per pair on the tiny
  // model, so 128 pairs keep the test near 40 s while every batch mixes clients' pairs.
  constexpr uint32_t kSmallH = 16, kSmallW = 32;
  ServerOptions options = tiny_options();
  options.warmup = {{kSmallH, kSmallW}};
  options.batching.max_batch = 4;
  options.batching.max_wait = std::chrono::milliseconds(2);
  auto harness = ServerHarness::start(options);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto engine = reference_engine(harness->runtime());
  ASSERT_NE(engine, nullptr);
  // One distinct pair per client; each answer is checked against its own expectation.
  std::vector<std::vector<uint8_t>> first(kClients), second(kClients), expected_conf(kClients);
  for (int c = 0; c < kClients; ++c) {
    first[c] = test_image(kSmallH, kSmallW, 100 + c);
    second[c] = test_image(kSmallH, kSmallW, 200 + c);
    expected_conf[c] = engine_outputs(harness->runtime(), *engine, first[c], second[c], kSmallH, kSmallW).at("conf_1");
  }
  InferArgs args;
  args.resolution = std::make_pair(kSmallH, kSmallW);
  std::atomic<int> good{0};
  std::atomic<uint32_t> largest_batch{0};
  std::vector<std::string> failures(kClients);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      auto client = TestClient::connect(harness->dir(), "client-" + std::to_string(c));
      if (!client.is_ok()) {
        failures[c] = client.status().to_string();
        return;
      }
      auto region = (*client)->add_region(64 << 10);
      if (!region.is_ok()) {
        failures[c] = region.status().to_string();
        return;
      }
      auto& [memory, region_id] = *region;
      std::memcpy(memory->data(), first[c].data(), first[c].size());
      std::memcpy(memory->data() + 16384, second[c].data(), second[c].size());
      for (int r = 0; r < kRequests; ++r) {
        const uint64_t id = (*client)->next_id();
        auto answer =
            (*client)->call(make_infer_pair(id, (*client)->session(), {region_id, 0, kSmallH, kSmallW, kSmallW * 3, {}},
                                            {region_id, 16384, kSmallH, kSmallW, kSmallW * 3, {}}, args),
                            id, 120'000);
        if (!answer.is_ok() || answer->type() != wire::ResponseBody::InferPairResult) {
          failures[c] = "infer " + std::to_string(r) + ": " +
                        (answer.is_ok() ? answer->error_message() : answer.status().to_string());
          return;
        }
        const uint32_t batch = answer->response->body_as_InferPairResult()->handle()->timings()->batch_size();
        for (uint32_t seen = largest_batch.load(); batch > seen && !largest_batch.compare_exchange_weak(seen, batch);) {
        }
        const uint64_t fid = (*client)->next_id();
        auto fetched = (*client)->call(
            make_fetch(fid, (*client)->session(), handle_id(*answer), {"conf_1"}, RegionDest{region_id, 32768}, true),
            fid);
        if (!fetched.is_ok() || fetched->type() != wire::ResponseBody::FetchResult) {
          failures[c] = "fetch " + std::to_string(r);
          return;
        }
        // A batched graph may round differently from the single one; another pair's result
        // differs by orders of magnitude more.
        if (max_relative_error(region_tensors(*fetched, memory->data()).at("conf_1"), expected_conf[c]) > 1e-4) {
          failures[c] = "request " + std::to_string(r) + " got another pair's result";
          return;
        }
        ++good;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int c = 0; c < kClients; ++c) EXPECT_TRUE(failures[c].empty()) << "client " << c << ": " << failures[c];
  EXPECT_EQ(good.load(), kClients * kRequests);
  EXPECT_GT(largest_batch.load(), 1u) << "concurrent clients' pairs should have shared batches";

  // Every session, region and handle is gone again.
  auto probe = TestClient::connect(harness->dir(), "probe", false);
  ASSERT_TRUE(probe.is_ok());
  EXPECT_TRUE(wait_for_status(**probe, [&](const wire::StatusReport& report) {
    return report.sessions_open() == 0 && report.region_bytes() == 0 &&
           report.throughput()->requests_ok() >= uint64_t{2} * kClients * kRequests &&
           report.throughput()->inferences() == uint64_t{kClients} * kRequests &&
           report.devices()->Get(0)->result_bytes() == 0;
  })) << "sessions, regions or handles left behind, or counters off";
}

TEST(RecondServer, BatchesConcurrentPairsOfOneSizeWithUnchangedResults) {
  ServerOptions options = tiny_options();
  options.batching.max_batch = 4;
  options.batching.max_wait = std::chrono::milliseconds(50);
  auto harness = ServerHarness::start(options);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto engine = reference_engine(harness->runtime());
  ASSERT_NE(engine, nullptr);
  constexpr int kClients = 4;
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int c = 0; c < kClients; ++c) {
    auto client = TestClient::connect(harness->dir(), "batch-" + std::to_string(c));
    ASSERT_TRUE(client.is_ok());
    clients.push_back(std::move(client).value());
  }
  // All four send before any answer: the scheduler waits up to 50 ms to fill a batch of 4.
  std::vector<uint64_t> ids;
  for (int c = 0; c < kClients; ++c) {
    ids.push_back(clients[c]->next_id());
    ASSERT_TRUE(clients[c]
                    ->send_frames(
                        {make_infer_pair(ids[c], clients[c]->session(), {{}, 0, kH, kW, 0, test_image(kH, kW, 300 + c)},
                                         {{}, 0, kH, kW, 0, test_image(kH, kW, 400 + c)})})
                    .is_ok());
  }
  uint32_t largest_batch = 0;
  for (int c = 0; c < kClients; ++c) {
    auto answer = clients[c]->receive();
    ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
    ASSERT_EQ(answer->type(), wire::ResponseBody::InferPairResult) << answer->error_message();
    largest_batch =
        std::max(largest_batch, answer->response->body_as_InferPairResult()->handle()->timings()->batch_size());
    const uint64_t fid = clients[c]->next_id();
    auto fetched = clients[c]->call(make_fetch(fid, clients[c]->session(), handle_id(*answer), {}, std::nullopt), fid);
    ASSERT_TRUE(fetched.is_ok());
    const TensorBytes got = inline_tensors(*fetched);
    const TensorBytes want =
        engine_outputs(harness->runtime(), *engine, test_image(kH, kW, 300 + c), test_image(kH, kW, 400 + c), kH, kW);
    // A batched graph may order reductions differently: compare as floats.
    for (const auto& [name, bytes] : want) {
      ASSERT_TRUE(got.count(name)) << name;
      EXPECT_LT(max_relative_error(got.at(name), bytes), 1e-4) << name;
    }
  }
  EXPECT_EQ(largest_batch, 4u) << "four concurrent same-size pairs should share one engine call";
}

}  // namespace
}  // namespace recon::daemon::testing
