// recon_bench_onnx_daemon: what recond adds to an ONNX model's run, in µs per request. A small
// model (default: the MLP tests/models/onnx exports; RECON_ONNX_BENCH_MODEL=FILE.onnx with
// RECON_ONNX_BENCH_INPUT=FILE.npy for another) runs
//  * Engine        in-process: gpu::onnx::Engine::run (upload, graph, download);
//  * Daemon/inline through a real recond (child process): Infer with the tensor inline, fetch the
//                  outputs inline, release — interleaved request by request with Engine, so that a
//                  drifting machine hits both alike: overhead_us and ratio_vs_engine;
//  * Daemon/region the same with the input in a registered region and the outputs fetched into
//                  shared memory (librecon's output arena);
//  * Clients       C clients (threads, each its own session; 16 by default) in a closed loop,
//                  requests of the input's rows, outputs fetched: against the model loaded alone
//                  and loaded again with dynamic batching (config.pbtxt: max_batch_size
//                  RECON_ONNX_BENCH_MAX_BATCH, default 16; max_queue_delay_microseconds 500),
//                  alternating rounds of both in one run: requests/s, p50 latency, and the gain.
// recond runs on the default device (RECON_DEVICE picks another), the engine on the same one, in
// RECON_ONNX_BENCH_PRECISION (fp32 by default, fp32-split or fp16).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gpu/models/onnx/onnx_engine.h"
#include "recon/client.h"
#include "tests/client/recond_process.h"
#include "tools/io/npy.h"

namespace {

namespace fs = std::filesystem;
namespace onnx = recon::gpu::onnx;
using namespace recon::client;
using Clock = std::chrono::steady_clock;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

struct Setup {
  std::string error;
  std::unique_ptr<recon::gpu::Runtime> runtime;
  std::unique_ptr<onnx::Engine> engine;
  recon::io::NpyArray input;
  std::string input_name;
  std::unique_ptr<testing::Recond> recond;
  fs::path models;
  std::optional<Client> client;

  ~Setup() {
    client.reset();
    if (recond) recond->stop();
    std::error_code ec;
    if (!models.empty()) fs::remove_all(models, ec);
  }
};

onnx::HostTensor host_input(const Setup& s) {
  onnx::HostTensor t;
  t.name = s.input_name;
  t.type = onnx::ElemType::kFloat;
  t.dims = s.input.shape;
  t.bytes = s.input.data;
  return t;
}

// `model` and its external data files (PyTorch's exporter writes model.onnx.data for large models)
// into `dir` as model.onnx...
void copy_model(const fs::path& model, const fs::path& dir) {
  fs::create_directories(dir);
  const std::string file = model.filename().string();
  for (const auto& e : fs::directory_iterator(model.parent_path())) {
    const std::string name = e.path().filename().string();
    if (name.rfind(file, 0) == 0) fs::copy_file(e.path(), dir / ("model.onnx" + name.substr(file.size())));
  }
}

// Fills `out` once: the model, its input, the in-process engine, and recond serving the model
// twice: "bench" (each request alone) and "bench_batched" (dynamic batching).
void start(Setup& out) {
  {
    const std::string model = env_or("RECON_ONNX_BENCH_MODEL", RECON_ONNX_TORCH_MODELS "/mlp/model.onnx");
    const std::string input = env_or("RECON_ONNX_BENCH_INPUT", RECON_ONNX_TORCH_MODELS "/mlp/input_0.npy");
    auto array = recon::io::read_npy_file(input);
    if (!array.is_ok() || array->descr != "<f4") {
      out.error = input + ": a float32 .npy input is needed";
      return;
    }
    out.input = std::move(*array);
    auto rt = recon::gpu::Runtime::create();
    if (!rt.is_ok()) {
      out.error = rt.status().to_string();
      return;
    }
    out.runtime = std::move(*rt);
    const std::string precision_name = env_or("RECON_ONNX_BENCH_PRECISION", "fp32");
    auto precision = recon::gpu::parse_precision(precision_name);
    if (!precision.is_ok()) {
      out.error = "RECON_ONNX_BENCH_PRECISION: " + precision.status().to_string();
      return;
    }
    auto engine = onnx::Engine::load(*out.runtime, model, onnx::engine_options(*precision));
    if (!engine.is_ok()) {
      out.error = engine.status().to_string();
      return;
    }
    out.engine = std::move(*engine);
    out.input_name = out.engine->inputs().front()->name;
    out.models = fs::temp_directory_path() / ("recon-onnx-bench-" + std::to_string(::getpid()));
    copy_model(model, out.models / "bench" / "1");
    copy_model(model, out.models / "bench_batched" / "1");
    std::ofstream(out.models / "bench_batched" / "config.pbtxt")
        << "max_batch_size: " << env_or("RECON_ONNX_BENCH_MAX_BATCH", "16")
        << "\ndynamic_batching { max_queue_delay_microseconds: 500 }\n";
    try {
      out.recond = std::make_unique<testing::Recond>(
          std::vector<std::string>{"--model-dir", out.models.string(), "--precision", precision_name});
      if (!out.recond->wait_ready(std::chrono::seconds(300))) {
        out.error = "recond did not start: " + out.recond->log();
        return;
      }
      Client control = Client::connect_control(out.recond->options());
      control.load_model({.name = "bench"});
      control.load_model({.name = "bench_batched"});
      out.client.emplace(Client::connect(out.recond->options()));
      // Both sides compile the graph for this input shape before anything is timed.
      const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(out.input.data.data()),
                                             out.input.data.size());
      const ModelInput in[] = {ModelInput::inline_tensor(out.input_name, DType::kF32,
                                                         {out.input.shape.begin(), out.input.shape.end()}, bytes)};
      out.client->infer("bench", in).get().release();
      const onnx::HostTensor x = host_input(out);
      if (!out.engine->run(std::span(&x, 1)).is_ok()) out.error = "the engine failed on the input";
    } catch (const Error& e) {
      const std::string log = out.recond ? out.recond->log() : std::string();
      out.error = std::string("recond: ") + e.what() + "\n" + log.substr(log.size() > 2000 ? log.size() - 2000 : 0);
    }
  }
}

// Started inside the static's construction: its destructor is then registered after the Vulkan
// driver's own exit handlers (the driver loads while start() runs), so it runs before them. Started
// after construction, the set-up was torn down after NVIDIA's driver had shut down (SIGSEGV at exit).
struct StartedSetup : Setup {
  StartedSetup() { start(*this); }
};

Setup& setup() {
  static StartedSetup s;
  return s;
}

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

#define SETUP_OR_SKIP(s)                  \
  Setup& s = setup();                     \
  if (!s.error.empty()) {                 \
    state.SkipWithError(s.error.c_str()); \
    return;                               \
  }

void BM_Engine(benchmark::State& state) {
  SETUP_OR_SKIP(s);
  const onnx::HostTensor x = host_input(s);
  for (auto _ : state) {
    if (!s.engine->run(std::span(&x, 1)).is_ok()) state.SkipWithError("engine failed");
  }
  state.SetLabel("in-process Engine::run (upload, graph, download)");
}

void BM_Daemon(benchmark::State& state) {
  SETUP_OR_SKIP(s);
  const bool region = state.range(0) == 1;
  const onnx::HostTensor x = host_input(s);
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(s.input.data.data()), s.input.data.size());
  const std::vector<uint64_t> shape(s.input.shape.begin(), s.input.shape.end());
  ImageBuffer buffer = s.client->create_buffer(std::max<size_t>(bytes.size(), 4096), "onnx-bench");
  const BufferTensor view = buffer.write_tensor(0, DType::kF32, shape, bytes);
  const ModelInput in[] = {region ? ModelInput::buffer_tensor(s.input_name, view)
                                  : ModelInput::inline_tensor(s.input_name, DType::kF32, shape, bytes)};
  double daemon_s = 0, engine_s = 0;
  for (auto _ : state) {
    auto t = Clock::now();
    Result r = s.client->infer("bench", in).get();
    r.fetch({}, /*release_after=*/true);
    daemon_s += since(t);
    state.PauseTiming();
    t = Clock::now();
    if (!s.engine->run(std::span(&x, 1)).is_ok()) state.SkipWithError("engine failed");
    engine_s += since(t);
    state.ResumeTiming();
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["us_per_request"] = daemon_s * 1e6 / n;
  state.counters["engine_us"] = engine_s * 1e6 / n;
  state.counters["overhead_us"] = (daemon_s - engine_s) * 1e6 / n;
  state.counters["ratio_vs_engine"] = daemon_s / engine_s;
  state.SetLabel(std::string("Infer + fetch + release through recond, input ") + (region ? "in a region" : "inline"));
}

// `clients` sessions, each a thread sending `model` requests in a closed loop (infer, fetch,
// release) for `seconds`: requests per second and the median latency in ms.
struct Load {
  double requests_per_s = 0;
  double p50_ms = 0;
};
Load closed_loop(const Setup& s, const std::string& model, int clients, double seconds) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(s.input.data.data()), s.input.data.size());
  const std::vector<uint64_t> shape(s.input.shape.begin(), s.input.shape.end());
  std::vector<std::vector<double>> latencies(static_cast<size_t>(clients));
  std::atomic<bool> failed{false};
  const auto stop = Clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      try {
        Client client = Client::connect(s.recond->options());
        const ModelInput in[] = {ModelInput::inline_tensor(s.input_name, DType::kF32, shape, bytes)};
        while (Clock::now() < stop) {
          const auto t = Clock::now();
          Result r = client.infer(model, in).get();
          r.fetch({}, /*release_after=*/true);
          latencies[static_cast<size_t>(c)].push_back(since(t));
        }
      } catch (const Error&) {
        failed = true;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  if (failed || all.empty()) return {};
  std::sort(all.begin(), all.end());
  return {static_cast<double>(all.size()) / seconds, all[all.size() / 2] * 1e3};
}

// The daemon's counters of `model` (GetStatus): requests, rows, engine calls, queue and compute time.
ModelStatus counters_of(const Setup& s, const std::string& model) {
  for (const ModelStatus& m : Client::connect_control(s.recond->options()).status().models) {
    if (m.name == model) return m;
  }
  return {};
}

void BM_Clients(benchmark::State& state) {
  SETUP_OR_SKIP(s);
  const int clients = static_cast<int>(state.range(0));
  closed_loop(s, "bench_batched", clients, 0.5);  // compiles the batch sizes the load forms
  const ModelStatus before = counters_of(s, "bench_batched");
  double alone_rps = 0, batched_rps = 0, alone_p50 = 0, batched_p50 = 0;
  for (auto _ : state) {
    const Load alone = closed_loop(s, "bench", clients, 2.0);
    const Load batched = closed_loop(s, "bench_batched", clients, 2.0);
    if (alone.requests_per_s == 0 || batched.requests_per_s == 0) state.SkipWithError("a client failed");
    alone_rps += alone.requests_per_s;
    batched_rps += batched.requests_per_s;
    alone_p50 += alone.p50_ms;
    batched_p50 += batched.p50_ms;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["alone_req_per_s"] = alone_rps / n;
  state.counters["batched_req_per_s"] = batched_rps / n;
  state.counters["alone_p50_ms"] = alone_p50 / n;
  state.counters["batched_p50_ms"] = batched_p50 / n;
  state.counters["gain"] = batched_rps / std::max(alone_rps, 1e-9);
  // Where the batched requests' time went, from the daemon's own counters.
  const ModelStatus after = counters_of(s, "bench_batched");
  const double calls = static_cast<double>(std::max<uint64_t>(after.executions - before.executions, 1));
  const double requests = static_cast<double>(std::max<uint64_t>(after.requests - before.requests, 1));
  state.counters["batched_rows_per_call"] = static_cast<double>(after.inferences - before.inferences) / calls;
  state.counters["batched_queue_ms"] = static_cast<double>(after.queue_us - before.queue_us) / requests / 1e3;
  state.counters["batched_compute_ms"] = static_cast<double>(after.compute_us - before.compute_us) / requests / 1e3;
  state.SetLabel(std::to_string(clients) + " clients in a closed loop, each request alone vs dynamic batching");
}

BENCHMARK(BM_Engine)->MinTime(1.0)->UseRealTime();
BENCHMARK(BM_Clients)->Arg(16)->ArgName("clients")->Iterations(3)->UseRealTime();
BENCHMARK(BM_Daemon)->Arg(0)->Arg(1)->ArgName("region")->MinTime(1.0)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
