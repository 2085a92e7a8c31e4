// recon_bench_onnx_daemon: what recond adds to an ONNX model's run, in µs per request. A small
// model (default: the MLP tests/models/onnx exports; RECON_ONNX_BENCH_MODEL=FILE.onnx with
// RECON_ONNX_BENCH_INPUT=FILE.npy for another) runs
//  * Engine        in-process: gpu::onnx::Engine::run (upload, graph, download);
//  * Daemon/inline through a real recond (child process): Infer with the tensor inline, fetch the
//                  outputs inline, release — interleaved request by request with Engine, so that a
//                  drifting machine hits both alike: overhead_us and ratio_vs_engine;
//  * Daemon/region the same with the input in a registered region and the outputs fetched into
//                  shared memory (librecon's output arena).
// recond runs on the default device (RECON_DEVICE picks another), the engine on the same one.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

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

// Fills `out` once: the model, its input, the in-process engine, and recond serving the model.
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
    auto engine = onnx::Engine::load(*out.runtime, model);
    if (!engine.is_ok()) {
      out.error = engine.status().to_string();
      return;
    }
    out.engine = std::move(*engine);
    out.input_name = out.engine->inputs().front()->name;
    out.models = fs::temp_directory_path() / ("recon-onnx-bench-" + std::to_string(::getpid()));
    fs::create_directories(out.models / "bench" / "1");
    fs::copy_file(model, out.models / "bench" / "1" / "model.onnx");
    // External data files beside it (PyTorch's exporter writes model.onnx.data for large models).
    for (const auto& e : fs::directory_iterator(fs::path(model).parent_path())) {
      const std::string name = e.path().filename().string();
      if (name != fs::path(model).filename().string() && name.rfind(fs::path(model).filename().string(), 0) == 0) {
        fs::copy_file(e.path(), out.models / "bench" / "1" /
                                    ("model.onnx" + name.substr(fs::path(model).filename().string().size())));
      }
    }
    try {
      out.recond = std::make_unique<testing::Recond>(
          std::vector<std::string>{"--model-dir", out.models.string(), "--precision", "fp32"});
      if (!out.recond->wait_ready(std::chrono::seconds(300))) {
        out.error = "recond did not start: " + out.recond->log();
        return;
      }
      Client::connect_control(out.recond->options()).load_model({.name = "bench"});
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

Setup& setup() {
  static Setup s;
  static const bool started = (start(s), true);
  (void)started;
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

BENCHMARK(BM_Engine)->MinTime(1.0)->UseRealTime();
BENCHMARK(BM_Daemon)->Arg(0)->Arg(1)->ArgName("region")->MinTime(1.0)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
