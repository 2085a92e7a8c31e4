// recon_bench_daemon: what recond adds on top of the engine, in the units users care about.
//  * StatusRoundTrip        µs per empty request (GetStatus) through ZeroMQ ipc and back;
//  * HandOff/<path>/<size>  ms per InferPair+Release with the images in a registered memfd
//                           region or inline in the request, at model size (64x48) and at
//                           640x480 (resized by the daemon): the difference is the hand-off;
//  * Fetch/<destination>    GB/s copying all eight outputs of a handle into a region or inline;
//  * Engine                 ms per pair in-process (64x48 and 32x16);
//  * Daemon                 ms per pair through recond, interleaved pair by pair with the
//                           in-process engine: overhead_ms_per_pair and ratio_vs_engine (> 1:
//                           the daemon is slower by that factor);
//  * Concurrent/<max_batch> pairs/s with 4 clients sending at once, without and with batching;
//  * Batch                  ms per pair for 16 images (15 consecutive pairs) as one InferBatch vs
//                           15 InferPair requests sent at once (pipelined), interleaved: the
//                           gain of encoding each image once (ratio_vs_pairs < 1: faster);
//  * Match                  ms per Match + Release round trip on a pair handle (fast reciprocal
//                           NN, subsample 8) vs the same matcher in-process on the same device.
// RECON_BENCH_STAGES=1 prints the engine's GPU time per stage once (where a pair's time goes).
// The server runs in-process on the tiny golden model; RECON_DEVICE picks the device.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "bench/daemon/bench_daemon.h"
#include "daemon/ipc/wire_convert.h"
#include "gpu/models/match/match.h"
#include "tests/daemon/server/server_harness.h"
#include "tests/daemon/server/test_client.h"

namespace recon::daemon::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kH = kTinyHeight, kW = kTinyWidth;

// The daemon plus an in-process engine on the same runtime, the baseline of the comparisons
// (declared after the daemon's members, so it is destroyed before the runtime it uses).
struct Setup : BenchDaemon {
  std::unique_ptr<gpu::Mast3rEngine> engine;
};

std::map<uint32_t, Setup> g_setups;  // by max_batch; dropped by main (bench_daemon.h)

Setup& setup(uint32_t max_batch = 1) {
  Setup& s = g_setups[max_batch];
  if (s.harness || !s.error.empty()) return s;
  ServerOptions options = tiny_options();
  options.batching.max_batch = max_batch;
  options.batching.max_wait = std::chrono::microseconds(max_batch > 1 ? 2000 : 0);
  options.limits.max_handles_per_client = 1024;
  static_cast<BenchDaemon&>(s) = start_bench_daemon(options, "bench");
  if (!s.error.empty()) return s;
  auto engine = gpu::Mast3rEngine::load(s.harness->runtime(), kTinyModel, gpu::Precision::kF32);
  if (!engine.is_ok()) {
    s.error = engine.status().to_string();
    return s;
  }
  s.engine = std::move(engine).value();
  return s;
}

#define RECON_SETUP_OR_SKIP(s)            \
  Setup& s = setup();                     \
  if (!s.error.empty()) {                 \
    state.SkipWithError(s.error.c_str()); \
    return;                               \
  }

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void BM_StatusRoundTrip(benchmark::State& state) {
  RECON_SETUP_OR_SKIP(s);
  const auto start = Clock::now();
  for (auto _ : state) {
    const uint64_t id = s.client->next_id();
    auto answer = s.client->call(make_status(id), id);
    if (!answer.is_ok()) state.SkipWithError("status failed");
  }
  state.counters["us_per_request"] = seconds_since(start) * 1e6 / static_cast<double>(state.iterations());
}

// Infers one pair and releases its handle; false on any failure.
bool infer_and_release(TestClient& client, const ImageArg& a, const ImageArg& b) {
  const uint64_t id = client.next_id();
  auto answer = client.call(make_infer_pair(id, client.session(), a, b), id);
  if (!answer.is_ok() || answer->type() != wire::ResponseBody::InferPairResult) return false;
  const uint64_t rid = client.next_id();
  auto released = client.call(make_release(rid, client.session(), {handle_id(*answer)}), rid);
  return released.is_ok() && released->code() == StatusCode::kOk;
}

void BM_HandOff(benchmark::State& state) {
  RECON_SETUP_OR_SKIP(s);
  const bool shared = state.range(0) == 0;
  const uint32_t h = state.range(1) == 0 ? kH : 480, w = state.range(1) == 0 ? kW : 640;
  const auto pixels1 = test_image(h, w, 1), pixels2 = test_image(h, w, 2);
  ImageArg a, b;
  if (shared) {
    a = {s.region, 0, h, w, w * 3, {}};
    b = {s.region, 4 << 20, h, w, w * 3, {}};
  } else {
    a = {{}, 0, h, w, 0, pixels1};
    b = {{}, 0, h, w, 0, pixels2};
  }
  const auto start = Clock::now();
  for (auto _ : state) {
    if (shared) {  // the client writes its images into the region each time
      std::memcpy(s.memory->data(), pixels1.data(), pixels1.size());
      std::memcpy(s.memory->data() + (4 << 20), pixels2.data(), pixels2.size());
    }
    if (!infer_and_release(*s.client, a, b)) state.SkipWithError("inference failed");
  }
  const double seconds = seconds_since(start);
  state.counters["ms_per_pair"] = seconds * 1e3 / static_cast<double>(state.iterations());
  state.counters["image_MB_per_s"] =
      static_cast<double>(pixels1.size() * 2) * static_cast<double>(state.iterations()) / seconds / 1e6;
  state.SetLabel(std::string(shared ? "shared memory " : "inline ") + std::to_string(w) + "x" + std::to_string(h));
}

void BM_Fetch(benchmark::State& state) {
  RECON_SETUP_OR_SKIP(s);
  const bool to_region = state.range(0) == 0;
  const auto pixels = test_image(kH, kW, 3);
  const uint64_t id = s.client->next_id();
  auto answer = s.client->call(
      make_infer_pair(id, s.client->session(), {{}, 0, kH, kW, 0, pixels}, {{}, 0, kH, kW, 0, pixels}), id);
  if (!answer.is_ok() || answer->type() != wire::ResponseBody::InferPairResult) {
    state.SkipWithError("inference failed");
    return;
  }
  const Id128 handle = handle_id(*answer);
  uint64_t bytes = 0;
  for (const wire::TensorInfo* t : *answer->response->body_as_InferPairResult()->handle()->tensors()) {
    bytes += t->byte_size();
  }
  const auto start = Clock::now();
  for (auto _ : state) {
    const uint64_t fid = s.client->next_id();
    std::optional<RegionDest> destination;
    if (to_region) destination = RegionDest{s.region, 8 << 20};
    auto fetched = s.client->call(make_fetch(fid, s.client->session(), handle, {}, destination), fid);
    if (!fetched.is_ok() || fetched->type() != wire::ResponseBody::FetchResult) state.SkipWithError("fetch failed");
  }
  const double seconds = seconds_since(start);
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * static_cast<int64_t>(state.iterations()));
  state.counters["GB_per_s"] = static_cast<double>(bytes) * static_cast<double>(state.iterations()) / seconds / 1e9;
  state.counters["us_per_fetch"] = seconds * 1e6 / static_cast<double>(state.iterations());
  state.SetLabel(std::string(to_region ? "into a region, " : "inline, ") + std::to_string(bytes) + " bytes");
  const uint64_t rid = s.client->next_id();
  (void)s.client->call(make_release(rid, s.client->session(), {handle}), rid);
}

void BM_Engine(benchmark::State& state) {
  RECON_SETUP_OR_SKIP(s);
  const uint32_t h = state.range(0) == 0 ? kH : 16, w = state.range(0) == 0 ? kW : 32;
  const auto a = test_image(h, w, 4), b = test_image(h, w, 5);
  const gpu::ImageU8View v1{a.data(), h, w, 0}, v2{b.data(), h, w, 0};
  (void)s.engine->infer(std::span(&v1, 1), std::span(&v2, 1));  // builds the graph for this size
  double gpu_ms = 0;
  bool printed = false;
  const auto start = Clock::now();
  for (auto _ : state) {
    auto result = s.engine->infer(std::span(&v1, 1), std::span(&v2, 1));
    if (!result.is_ok()) {
      state.SkipWithError(result.status().to_string().c_str());
      break;
    }
    gpu_ms += result->gpu_ms;
    if (std::getenv("RECON_BENCH_STAGES") != nullptr && !printed) {  // where the engine's time goes
      for (const auto& [stage, stage_ms] : result->stage_ms)
        std::fprintf(stderr, "  stage %s %.2f ms\n", stage.c_str(), stage_ms);
      printed = true;
    }
  }
  const double ms = seconds_since(start) * 1e3 / static_cast<double>(state.iterations());
  state.counters["ms_per_pair"] = ms;
  state.counters["gpu_ms_per_pair"] = gpu_ms / static_cast<double>(state.iterations());
  state.SetLabel("in-process Mast3rEngine::infer, " + std::to_string(w) + "x" + std::to_string(h));
}

// Interleaved with the in-process engine, pair by pair, so that a drifting machine load (shared
// CI cores) hits both sides alike.
void BM_Daemon(benchmark::State& state) {
  RECON_SETUP_OR_SKIP(s);
  const auto a = test_image(kH, kW, 4), b = test_image(kH, kW, 5);
  std::memcpy(s.memory->data(), a.data(), a.size());
  std::memcpy(s.memory->data() + (4 << 20), b.data(), b.size());
  const ImageArg image1{s.region, 0, kH, kW, kW * 3, {}}, image2{s.region, 4 << 20, kH, kW, kW * 3, {}};
  const gpu::ImageU8View v1{a.data(), kH, kW, 0}, v2{b.data(), kH, kW, 0};
  double daemon_s = 0, engine_s = 0;
  for (auto _ : state) {
    auto start = Clock::now();
    if (!infer_and_release(*s.client, image1, image2)) state.SkipWithError("inference failed");
    daemon_s += seconds_since(start);
    state.PauseTiming();
    start = Clock::now();
    if (!s.engine->infer(std::span(&v1, 1), std::span(&v2, 1)).is_ok()) state.SkipWithError("engine failed");
    engine_s += seconds_since(start);
    state.ResumeTiming();
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["ms_per_pair"] = daemon_s * 1e3 / n;
  state.counters["engine_ms_per_pair"] = engine_s * 1e3 / n;
  state.counters["overhead_ms_per_pair"] = (daemon_s - engine_s) * 1e3 / n;
  state.counters["ratio_vs_engine"] = daemon_s / engine_s;
  state.SetLabel("InferPair (shared memory) + Release through recond vs in-process infer, 64x48");
}

void BM_Concurrent(benchmark::State& state) {
  const uint32_t max_batch = static_cast<uint32_t>(state.range(0));
  Setup& s = setup(max_batch);
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  constexpr int kClients = 4, kPairsPerClient = 4;
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int c = 0; c < kClients; ++c) {
    auto client = TestClient::connect(s.harness->dir(), "concurrent");
    if (!client.is_ok()) {
      state.SkipWithError("connect failed");
      return;
    }
    clients.push_back(std::move(client).value());
  }
  const auto pixels = test_image(kH, kW, 6);
  const ImageArg image{{}, 0, kH, kW, 0, pixels};
  uint64_t pairs = 0;
  const auto start = Clock::now();
  for (auto _ : state) {
    std::vector<std::thread> threads;
    for (int c = 0; c < kClients; ++c) {
      threads.emplace_back([&, c] {
        for (int p = 0; p < kPairsPerClient; ++p) (void)infer_and_release(*clients[c], image, image);
      });
    }
    for (auto& t : threads) t.join();
    pairs += kClients * kPairsPerClient;
  }
  state.counters["pairs_per_s"] = static_cast<double>(pairs) / seconds_since(start);
  state.SetLabel(std::to_string(kClients) + " clients, max_batch " + std::to_string(max_batch));
}

// Releases every handle of a successful InferBatchResult; false when it is not one.
bool release_batch(TestClient& client, const Answer& answer) {
  const auto* result = answer.response->body_as_InferBatchResult();
  if (result == nullptr) return false;
  std::vector<Id128> handles;
  for (const wire::ResultHandle* h : *result->handles()) handles.push_back(from_wire(h->id()));
  const uint64_t rid = client.next_id();
  auto released = client.call(make_release(rid, client.session(), handles), rid);
  return released.is_ok() && released->code() == StatusCode::kOk;
}

void BM_Batch(benchmark::State& state) {
  RECON_SETUP_OR_SKIP(s);
  constexpr uint32_t kImages = 16;
  std::vector<ImageArg> images;
  for (uint32_t i = 0; i < kImages; ++i) {
    const auto pixels = test_image(kH, kW, 40 + i);
    const uint64_t offset = (uint64_t{12} << 20) + uint64_t{i} * (16 << 10);
    std::memcpy(s.memory->data() + offset, pixels.data(), pixels.size());
    images.push_back({s.region, offset, kH, kW, kW * 3, {}});
  }
  double batch_s = 0, pairs_s = 0;
  for (auto _ : state) {
    auto start = Clock::now();
    const uint64_t id = s.client->next_id();
    auto answer = s.client->call(make_infer_batch(id, s.client->session(), images), id, 600'000);
    if (!answer.is_ok() || !release_batch(*s.client, *answer)) state.SkipWithError("InferBatch failed");
    batch_s += seconds_since(start);
    state.PauseTiming();
    start = Clock::now();
    std::vector<uint64_t> ids;
    for (uint32_t k = 0; k + 1 < kImages; ++k) {
      ids.push_back(s.client->next_id());
      if (!s.client->send_frames({make_infer_pair(ids.back(), s.client->session(), images[k], images[k + 1])})
               .is_ok()) {
        state.SkipWithError("send failed");
      }
    }
    std::vector<Id128> handles;
    for (size_t n = 0; n < ids.size(); ++n) {
      auto pair = s.client->receive(600'000);
      if (!pair.is_ok() || pair->type() != wire::ResponseBody::InferPairResult) {
        state.SkipWithError("InferPair failed");
        break;
      }
      handles.push_back(handle_id(*pair));
    }
    const uint64_t rid = s.client->next_id();
    (void)s.client->call(make_release(rid, s.client->session(), handles), rid);
    pairs_s += seconds_since(start);
    state.ResumeTiming();
  }
  const double pairs = static_cast<double>(state.iterations()) * (kImages - 1);
  state.counters["ms_per_pair"] = batch_s * 1e3 / pairs;
  state.counters["pairs_ms_per_pair"] = pairs_s * 1e3 / pairs;
  state.counters["ratio_vs_pairs"] = batch_s / pairs_s;
  state.SetLabel("16 images 64x48: one InferBatch (15 pairs) vs 15 pipelined InferPair, + Release");
}

void BM_Match(benchmark::State& state) {
  RECON_SETUP_OR_SKIP(s);
  const auto a = test_image(kH, kW, 7), b = test_image(kH, kW, 8);
  const uint64_t id = s.client->next_id();
  auto pair =
      s.client->call(make_infer_pair(id, s.client->session(), {{}, 0, kH, kW, 0, a}, {{}, 0, kH, kW, 0, b}), id);
  if (!pair.is_ok() || pair->type() != wire::ResponseBody::InferPairResult) {
    state.SkipWithError("inference failed");
    return;
  }
  const Id128 source = handle_id(*pair);
  const gpu::ImageU8View v1{a.data(), kH, kW, 0}, v2{b.data(), kH, kW, 0};
  auto reference = s.engine->infer(std::span(&v1, 1), std::span(&v2, 1));
  if (!reference.is_ok()) {
    state.SkipWithError("engine failed");
    return;
  }
  const gpu::Mast3rOutputs& o = reference->tensors;
  const gpu::MatchMaps maps{o.pts3d[0], o.pts3d[1], o.desc_conf[0], o.desc_conf[1]};
  double daemon_s = 0, local_s = 0, match_s = 0;
  uint32_t matches = 0;
  for (auto _ : state) {
    auto start = Clock::now();
    const uint64_t mid = s.client->next_id();
    auto match = s.client->call(make_match(mid, s.client->session(), source), mid);
    if (!match.is_ok() || match->type() != wire::ResponseBody::MatchResult) {
      state.SkipWithError("Match failed");
      break;
    }
    matches = match->response->body_as_MatchResult()->match_count();
    match_s += seconds_since(start);
    const uint64_t rid = s.client->next_id();
    (void)s.client->call(make_release(rid, s.client->session(), {handle_id(*match)}), rid);
    daemon_s += seconds_since(start);
    state.PauseTiming();
    start = Clock::now();
    auto local = gpu::match_fast_reciprocal(s.harness->runtime(), o.desc[0], o.desc[1], {}, maps);
    if (!local.is_ok() || !local->to_host(s.harness->runtime()).is_ok()) state.SkipWithError("matcher failed");
    local_s += seconds_since(start);
    state.ResumeTiming();
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["ms_per_match"] = daemon_s * 1e3 / n;
  state.counters["in_process_ms"] = local_s * 1e3 / n;
  state.counters["match_call_ms"] = match_s * 1e3 / n;  // the Match round trip alone, without its Release
  state.counters["overhead_ms"] = (daemon_s - local_s) * 1e3 / n;
  state.counters["matches"] = matches;
  state.SetLabel("Match (subsample 8) + Release through recond vs match_fast_reciprocal in-process, 64x48");
  const uint64_t rid = s.client->next_id();
  (void)s.client->call(make_release(rid, s.client->session(), {source}), rid);
}

BENCHMARK(BM_StatusRoundTrip)->MinTime(1.0)->UseRealTime();
BENCHMARK(BM_HandOff)->ArgsProduct({{0, 1}, {0, 1}})->ArgNames({"inline", "big"})->Iterations(20)->UseRealTime();
BENCHMARK(BM_Fetch)->Arg(0)->Arg(1)->ArgName("inline")->MinTime(1.0)->UseRealTime();
BENCHMARK(BM_Engine)->Arg(0)->Arg(1)->ArgName("small")->Iterations(20)->UseRealTime();
BENCHMARK(BM_Daemon)->Iterations(30)->UseRealTime();
BENCHMARK(BM_Concurrent)->Arg(1)->Arg(4)->ArgName("max_batch")->Iterations(3)->UseRealTime();
BENCHMARK(BM_Batch)->Iterations(2)->UseRealTime();
BENCHMARK(BM_Match)->Iterations(10)->UseRealTime();

}  // namespace
}  // namespace recon::daemon::testing

int main(int argc, char** argv) {
  return recon::daemon::testing::run_benchmarks(argc, argv, [] { recon::daemon::testing::g_setups.clear(); });
}
