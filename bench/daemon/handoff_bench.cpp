// recon_bench_handoff: what zero-copy import and GPU preprocessing save (docs/DAEMON.md §9).
//  * Resize/<path>   ms per 1920x1080 → 512x288 official preparation (the released model's
//                    size): cpu = copy-out + tools/io's Pillow-exact resize on one core;
//                    gpu_zero_copy = the GPU resize reading an imported host mapping (imported
//                    once, outside the loop); gpu_staging = one upload of the image + the GPU
//                    resize. ratio_vs_cpu < 1: faster than the CPU path of the same run.
//  * HandOff/<path>/<size>  ms per InferPair + Release through recond (tiny model, long side 64)
//                    with both images in a registered region, for the three image paths of
//                    image_input.h, and the daemon's own input-stage time (Timings.input_ns:
//                    lease → prepared image, i.e. the hand-off) per pair. Sizes: 640x480, 1920x1080.
// The server runs in-process on the tiny golden model; RECON_DEVICE picks the device.
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <chrono>
#include <cstring>
#include <map>

#include "bench/daemon/bench_daemon.h"
#include "gpu/host_import.h"
#include "gpu/ops/resize_official.h"
#include "tests/daemon/server/server_harness.h"
#include "tests/daemon/server/test_client.h"
#include "tools/io/official_resize.h"

namespace recon::daemon::testing {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

constexpr uint32_t kHdH = 1080, kHdW = 1920, kModelSide = 512;

enum Path : int64_t { kCpu = 0, kZeroCopy = 1, kStaging = 2 };
const char* path_name(int64_t path) {
  return path == kCpu ? "cpu" : path == kZeroCopy ? "zero-copy" : "staging";
}

// ms per image of the CPU path, measured by the cpu run, for the ratios of the GPU runs.
double g_cpu_resize_ms = 0;

struct ResizeSetup {
  std::unique_ptr<gpu::Runtime> runtime;
  void* map = nullptr;  // the "client region": RW shared pages holding the HD image
  size_t map_bytes = 0;
  std::unique_ptr<gpu::HostImport> import;
  std::vector<uint8_t> pixels;
  std::string error;
};

ResizeSetup& resize_setup() {
  static ResizeSetup s = [] {
    ResizeSetup r;
    r.pixels = test_image(kHdH, kHdW, 7);
    auto rt = gpu::Runtime::create(in_memory_cache());
    if (!rt.is_ok()) {
      r.error = rt.status().to_string();
      return r;
    }
    r.runtime = std::move(rt).value();
    r.map_bytes = (r.pixels.size() + 4095) / 4096 * 4096;
    r.map = ::mmap(nullptr, r.map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (r.map == MAP_FAILED) {
      r.error = "mmap failed";
      return r;
    }
    std::memcpy(r.map, r.pixels.data(), r.pixels.size());
    if (r.runtime->caps().external_memory_host) {
      auto import = gpu::HostImport::create(r.runtime->context(), r.map, r.map_bytes);
      if (import.is_ok()) r.import = std::move(import).value();
    }
    return r;
  }();
  return s;
}

void BM_Resize(benchmark::State& state) {
  ResizeSetup& s = resize_setup();
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  const int64_t path = state.range(0);
  if (path == kZeroCopy && !s.import) {
    state.SkipWithError("the device cannot import host memory");
    return;
  }
  gpu::Runtime& rt = *s.runtime;
  const auto* client_bytes = static_cast<const uint8_t*>(s.map);
  const auto start = Clock::now();
  for (auto _ : state) {
    if (path == kCpu) {
      io::Image image{static_cast<int>(kHdW), static_cast<int>(kHdH), 3,
                      std::vector<uint8_t>(client_bytes, client_bytes + s.pixels.size())};
      auto prepared = io::prepare_official(image, kModelSide);
      if (!prepared.is_ok()) state.SkipWithError("CPU resize failed");
      benchmark::DoNotOptimize(prepared->image.pixels.data());
      continue;
    }
    gpu::ops::RgbImageSource source{{}, 0, kHdH, kHdW, kHdW * 3};
    if (path == kZeroCopy) {
      source.bytes = s.import->bytes();
    } else {
      auto uploaded = gpu::Tensor::from_host(rt, gpu::DType::kU8, {static_cast<int64_t>(s.pixels.size())}, client_bytes,
                                             s.pixels.size());
      if (!uploaded.is_ok()) {
        state.SkipWithError(uploaded.status().to_string().c_str());
        return;
      }
      source.bytes = std::move(uploaded).value();
    }
    auto out = gpu::ops::prepare_official_images(rt, std::span(&source, 1), kModelSide);
    if (!out.is_ok()) {
      state.SkipWithError(out.status().to_string().c_str());
      return;
    }
  }
  const double ms = seconds_since(start) * 1e3 / static_cast<double>(state.iterations());
  state.counters["ms_per_image"] = ms;
  if (path == kCpu) g_cpu_resize_ms = ms;
  if (path != kCpu && g_cpu_resize_ms > 0) state.counters["ratio_vs_cpu"] = ms / g_cpu_resize_ms;
  state.SetLabel(std::string(path_name(path)) + " 1920x1080 -> 512x288");
}

// One daemon per path, started on first use and kept for the run; dropped by main
// (bench_daemon.h).
std::map<int64_t, BenchDaemon> g_setups;

BenchDaemon& server_setup(int64_t path) {
  BenchDaemon& s = g_setups[path];
  if (s.harness || !s.error.empty()) return s;
  ServerOptions options = tiny_options();
  options.import_regions = path == kZeroCopy;
  options.gpu_preprocess = path != kCpu;
  options.limits.max_handles_per_client = 1024;
  s = start_bench_daemon(options, "handoff");
  return s;
}

void BM_HandOff(benchmark::State& state) {
  const int64_t path = state.range(0);
  BenchDaemon& s = server_setup(path);
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  if (path == kZeroCopy && !s.zero_copy) {
    state.SkipWithError("the device cannot import the region");
    return;
  }
  const uint32_t h = state.range(1) == 0 ? 480 : kHdH, w = state.range(1) == 0 ? 640 : kHdW;
  const auto pixels1 = test_image(h, w, 1), pixels2 = test_image(h, w, 2);
  std::memcpy(s.memory->data(), pixels1.data(), pixels1.size());
  std::memcpy(s.memory->data() + (8 << 20), pixels2.data(), pixels2.size());
  const ImageArg a{s.region, 0, h, w, w * 3, {}}, b{s.region, 8 << 20, h, w, w * 3, {}};
  TestClient& client = *s.client;
  double input_ns = 0;
  const auto start = Clock::now();
  for (auto _ : state) {
    const uint64_t id = client.next_id();
    auto answer = client.call(make_infer_pair(id, client.session(), a, b), id);
    if (!answer.is_ok() || answer->type() != wire::ResponseBody::InferPairResult) {
      state.SkipWithError("inference failed");
      return;
    }
    input_ns += static_cast<double>(answer->response->body_as_InferPairResult()->handle()->timings()->input_ns());
    const uint64_t rid = client.next_id();
    auto released = client.call(make_release(rid, client.session(), {handle_id(*answer)}), rid);
    if (!released.is_ok() || released->code() != StatusCode::kOk) state.SkipWithError("release failed");
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["ms_per_pair"] = seconds_since(start) * 1e3 / n;
  state.counters["input_ms_per_pair"] = input_ns / n / 1e6;
  state.SetLabel(std::string(path_name(path)) + " " + std::to_string(w) + "x" + std::to_string(h));
}

BENCHMARK(BM_Resize)->Arg(kCpu)->Arg(kZeroCopy)->Arg(kStaging)->ArgName("path")->Iterations(10)->UseRealTime();
BENCHMARK(BM_HandOff)
    ->ArgsProduct({{kCpu, kZeroCopy, kStaging}, {0, 1}})
    ->ArgNames({"path", "hd"})
    ->Iterations(10)
    ->UseRealTime();

}  // namespace
}  // namespace recon::daemon::testing

int main(int argc, char** argv) {
  return recon::daemon::testing::run_benchmarks(argc, argv, [] { recon::daemon::testing::g_setups.clear(); });
}
