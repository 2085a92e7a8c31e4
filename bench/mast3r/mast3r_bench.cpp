// recon_bench_mast3r: time per MASt3R pair on the device, fp32 and fp16, batch 1 and 8, and dump
// one pair's outputs for the equality check against the PyTorch reference (mast3r_fullsize.py,
// which also times PyTorch in the same run and prints the ratios). With --sequence N it also
// compares, per precision and in the same run, an N-image consecutive sequence through
// infer_batch (each image encoded once, encoder overlapping the decoder) against the same N−1
// pairs through infer one by one: pairs/s, GPU busy fraction and the speed-up.
//
//   recon_bench_mast3r --model M.safetensors --width 512 --height 384 [--pair DIR] [--dump DIR]
//                      [--batches 1,8] [--precisions fp32,fp16] [--sequence N] [--pair-batches 4]
//                      [--idle-ms 0,20,100] [--stream N] [--inputs host,device] [Google Benchmark flags]
// --inputs picks where the single-pair cases' images are: `host` (default) passes host pointers, which
// infer packs into staging memory on every call (recon-infer's path); `device` uploads them once
// into device tensors and passes those, as recond hands over images it has already prepared on the
// GPU (and as a PyTorch forward takes tensors already on the GPU). Both: one case each.
// --idle-ms runs each single-pair case once per value, sleeping that long before every timed call
// (20 calls): the latency at a camera's cadence, where the GPU's clock falls between pairs.
// With RECON_PROFILE_DISPATCHES=1 each single-pair case also prints its GPU time per dispatch
// (gpu/dispatch_profile.h) over its timed iterations; the profiled times are slower than normal.
// RECON_PROFILE_ROWS=N prints its N largest dispatches (default 40).
// --pair DIR reads DIR/img1_u8.bin and DIR/img2_u8.bin (H×W×3 bytes); otherwise seeded noise.
// --dump DIR writes DIR/<precision>_<output>.f32 (raw little-endian fp32) for batch 1.
// --batches "" runs no single-pair cases (only the sequence ones).
// --pair-batches 1,4,8 runs the infer_batch side once per Mast3rBatchOptions::pair_batch (the
// encoder chunk is the same number, at least 2).
// --stream N runs N independent pairs (2N distinct images) through one infer_batch call per
// --pair-batches value P (pairs decoded P at a time, 2P images per encoder chunk, the next chunk's
// encoder beside the current pairs' decoder and heads): throughput when batches of P pairs arrive
// back to back, against the mast3r/…/batch:P case of one infer call per batch.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/gpu/clock_warmup.h"
#include "gpu/dispatch_profile.h"
#include "gpu/models/mast3r/mast3r_engine.h"

namespace {

using recon::gpu::ForwardShape;
using recon::gpu::ImageU8View;
using recon::gpu::Mast3rEngine;
using recon::gpu::Precision;

struct Options {
  std::string model, pair_dir, dump_dir;
  int width = 512, height = 384;
  std::vector<int> batches = {1, 8};
  std::vector<Precision> precisions = {Precision::kF32, Precision::kF16, Precision::kF16Heads};
  int sequence = 0;  // images in the infer_batch sequence comparison; 0: none
  int stream = 0;    // independent pairs in the infer_batch stream case; 0: none
  std::vector<int> pair_batches = {4};
  // Idle gaps before each timed call, in ms (a camera's cadence: the GPU idles between pairs and
  // its clock falls); 0 is the back-to-back case.
  std::vector<int> idle_ms = {0};
  std::vector<std::string> inputs = {"host"};
};
Options g_options;
std::unique_ptr<recon::gpu::Runtime> g_runtime;
std::array<std::vector<uint8_t>, 2> g_images;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

void die(const std::string& m) {
  std::fprintf(stderr, "recon_bench_mast3r: %s\n", m.c_str());
  std::exit(1);
}

std::vector<uint8_t> read_bytes(const std::string& path, size_t expected) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (b.size() != expected) die(path + ": expected " + std::to_string(expected) + " bytes");
  return b;
}

void dump(Mast3rEngine& engine, Precision p) {
  ImageU8View a{g_images[0].data(), g_options.height, g_options.width, 0};
  ImageU8View b{g_images[1].data(), g_options.height, g_options.width, 0};
  auto r = engine.infer(std::span(&a, 1), std::span(&b, 1));
  if (!r.is_ok()) die(r.status().to_string());
  const auto tensors = r->tensors.list();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string name = recon::gpu::Mast3rOutputs::kNames[i];
    auto host = tensors[i]->host(*g_runtime);
    if (!host.is_ok()) die(host.status().to_string());
    std::ofstream out(g_options.dump_dir + "/" + recon::gpu::precision_name(p) + "_" + name + ".f32", std::ios::binary);
    out.write(reinterpret_cast<const char*>(host->data()), static_cast<std::streamsize>(host->size()));
  }
}

void bench_pair(benchmark::State& state, Precision precision, int batch, int idle_ms, bool device_inputs) {
  auto engine = Mast3rEngine::load(*g_runtime, g_options.model, precision);
  if (!engine.is_ok()) {
    state.SkipWithError(engine.status().to_string().c_str());
    return;
  }
  std::array<recon::gpu::Tensor, 2> on_device;
  if (device_inputs) {
    for (int v = 0; v < 2; ++v) {
      auto t = recon::gpu::Tensor::from_host(*g_runtime, recon::gpu::DType::kU8, {g_options.height, g_options.width, 3},
                                             g_images[v].data(), g_images[v].size());
      if (!t.is_ok()) {
        state.SkipWithError(t.status().to_string().c_str());
        return;
      }
      on_device[v] = std::move(t).value();
    }
  }
  auto view = [&](int v) {
    return ImageU8View{g_images[v].data(), g_options.height, g_options.width, 0,
                       device_inputs ? &on_device[v] : nullptr};
  };
  std::vector<ImageU8View> v1(batch, view(0));
  std::vector<ImageU8View> v2(batch, view(1));
  auto warm = engine.value()->infer(v1, v2);  // builds pipelines, records, first run
  if (!warm.is_ok()) {
    state.SkipWithError(warm.status().to_string().c_str());
    return;
  }
  const recon::Status clocks = recon::bench::warm_up_clocks([&] { return engine.value()->infer(v1, v2).status(); },
                                                            recon::bench::clock_warmup_seconds(g_runtime->caps()));
  if (!clocks.is_ok()) {
    state.SkipWithError(clocks.to_string().c_str());
    return;
  }
  double gpu_ms = 0, wall_ms = 0, span_ms = 0;
  std::vector<std::pair<std::string, double>> stages;
  recon::gpu::reset_dispatch_profile();
  for (auto _ : state) {
    if (idle_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));  // outside the manual time
    auto r = engine.value()->infer(v1, v2);
    if (!r.is_ok()) {
      state.SkipWithError(r.status().to_string().c_str());
      return;
    }
    state.SetIterationTime(r->wall_ms / 1000.0);
    gpu_ms += r->gpu_ms;
    wall_ms += r->wall_ms;
    span_ms += r->gpu_span_ms;
    stages = r->stage_ms;
  }
  const double n = static_cast<double>(state.iterations());
  if (recon::gpu::dispatch_profiling_enabled()) {
    std::printf("%s, %s batch %d, %lld iterations:\n%s", g_runtime->caps().device_name.c_str(),
                recon::gpu::precision_name(precision), batch, static_cast<long long>(state.iterations()),
                recon::gpu::format_dispatch_profile(40).c_str());
  }
  state.counters["ms_per_pair"] = wall_ms / (n * batch);
  state.counters["pairs_per_s"] = 1000.0 * n * batch / wall_ms;
  state.counters["gpu_ms_per_pair"] = gpu_ms / (n * batch);
  state.counters["gpu_ms_per_call"] = gpu_ms / n;
  state.counters["gpu_span_ms_per_call"] = span_ms / n;  // copies and gaps between the graphs included
  for (const auto& [stage, ms] : stages) state.counters["stage_" + stage + "_ms"] = ms;
  g_runtime->context().refresh_memory_budget();
  for (const auto& h : g_runtime->caps().heaps) {
    if (h.device_local) state.counters["device_heap_used_GiB"] = static_cast<double>(h.usage) / (1u << 30);
  }
  state.counters["activations_GiB"] =
      static_cast<double>(g_runtime->pool(recon::gpu::MemoryRole::kActivations).stats().high_water_bytes) / (1u << 30);
  if (!g_options.dump_dir.empty() && batch == 1) dump(*engine.value(), precision);
}

// The same consecutive pairs of a `--sequence` of seeded-noise images, either through one
// infer_batch call or through infer pair by pair. GPU busy = the GPU stage time of all pairs / wall
// time; it can exceed 1 when the second queue runs the encoder beside the decoder.
std::map<Precision, double> g_pairwise_pairs_per_s;  // baseline of the same run, for the ratio

// With `stream` pairs instead, the images are 2·stream and the pairs (0,1), (2,3), …: independent.
void bench_sequence(benchmark::State& state, Precision precision, int pair_batch, int stream = 0) {
  const bool batched = pair_batch > 0;  // 0: infer pair by pair
  auto engine = Mast3rEngine::load(*g_runtime, g_options.model, precision);
  if (!engine.is_ok()) {
    state.SkipWithError(engine.status().to_string().c_str());
    return;
  }
  if (batched) engine.value()->set_batch_options({std::max(2, pair_batch * (stream > 0 ? 2 : 1)), pair_batch});
  std::vector<std::vector<uint8_t>> pixels(stream > 0 ? 2 * stream : g_options.sequence);
  std::vector<ImageU8View> images;
  std::mt19937 gen(7);
  for (auto& p : pixels) {
    p.resize(static_cast<size_t>(g_options.width) * g_options.height * 3);
    for (auto& b : p) b = static_cast<uint8_t>(gen());
    images.push_back({p.data(), g_options.height, g_options.width, 0});
  }
  std::vector<recon::gpu::ImagePair> pairs = recon::gpu::consecutive_pairs(images.size());
  if (stream > 0) {
    pairs.clear();
    for (int i = 0; i < stream; ++i) pairs.push_back({2 * i, 2 * i + 1});
  }
  // One pass: returns wall ms, GPU ms and GPU ms by stage, or an error message.
  std::map<std::string, double> stage_totals;
  auto pass = [&](double& wall_ms, double& gpu_ms) -> std::string {
    const auto start = std::chrono::steady_clock::now();
    gpu_ms = 0;
    auto add = [&](const recon::gpu::Mast3rResult& r) {
      gpu_ms += r.gpu_ms;
      for (const auto& [stage, ms] : r.stage_ms) stage_totals[stage] += ms;
    };
    if (batched) {
      auto r = engine.value()->infer_batch(images, pairs);
      if (!r.is_ok()) return r.status().to_string();
      for (const auto& one : *r) add(one);
    } else {
      for (const auto& p : pairs) {
        auto r = engine.value()->infer(std::span(&images[p.first], 1), std::span(&images[p.second], 1));
        if (!r.is_ok()) return r.status().to_string();
        add(*r);
      }
    }
    wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return "";
  };
  double wall_ms = 0, gpu_ms = 0, total_wall = 0, total_gpu = 0;
  if (auto err = pass(wall_ms, gpu_ms); !err.empty()) {  // builds pipelines and graphs
    state.SkipWithError(err.c_str());
    return;
  }
  stage_totals.clear();
  for (auto _ : state) {
    if (auto err = pass(wall_ms, gpu_ms); !err.empty()) {
      state.SkipWithError(err.c_str());
      return;
    }
    state.SetIterationTime(wall_ms / 1000.0);
    total_wall += wall_ms;
    total_gpu += gpu_ms;
  }
  const double n_pairs = static_cast<double>(state.iterations() * pairs.size());
  const double pairs_per_s = 1000.0 * n_pairs / total_wall;
  state.counters["pairs_per_s"] = pairs_per_s;
  state.counters["ms_per_pair"] = total_wall / n_pairs;
  state.counters["gpu_ms_per_pair"] = total_gpu / n_pairs;
  state.counters["gpu_busy"] = total_gpu / total_wall;
  for (const auto& [stage, ms] : stage_totals) state.counters["stage_" + stage + "_ms"] = ms / n_pairs;  // per pair
  state.counters["second_queue"] = g_runtime->context().has_second_compute_queue() ? 1 : 0;
  if (!batched) {
    g_pairwise_pairs_per_s[precision] = pairs_per_s;
  } else if (g_pairwise_pairs_per_s.count(precision)) {
    state.counters["speedup_vs_pairwise"] = pairs_per_s / g_pairwise_pairs_per_s[precision];
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : (die(a + " needs a value"), ""); };
    if (a == "--model")
      g_options.model = next();
    else if (a == "--pair")
      g_options.pair_dir = next();
    else if (a == "--dump")
      g_options.dump_dir = next();
    else if (a == "--width")
      g_options.width = std::atoi(next().c_str());
    else if (a == "--height")
      g_options.height = std::atoi(next().c_str());
    else if (a == "--batches") {
      g_options.batches.clear();
      for (auto& s : split(next())) g_options.batches.push_back(std::atoi(s.c_str()));
    } else if (a == "--sequence") {
      g_options.sequence = std::atoi(next().c_str());
    } else if (a == "--stream") {
      g_options.stream = std::atoi(next().c_str());
    } else if (a == "--pair-batches") {
      g_options.pair_batches.clear();
      for (auto& s : split(next())) g_options.pair_batches.push_back(std::atoi(s.c_str()));
    } else if (a == "--inputs") {
      g_options.inputs = split(next());
      for (const auto& in : g_options.inputs) {
        if (in != "host" && in != "device") die("--inputs takes host and/or device");
      }
    } else if (a == "--idle-ms") {
      g_options.idle_ms.clear();
      for (auto& s : split(next())) g_options.idle_ms.push_back(std::atoi(s.c_str()));
    } else if (a == "--precisions") {
      g_options.precisions.clear();
      for (auto& s : split(next())) g_options.precisions.push_back(recon::gpu::parse_precision(s).value());
    } else
      rest.push_back(argv[i]);
  }
  if (g_options.model.empty()) die("--model is required");
  const size_t bytes = static_cast<size_t>(g_options.width) * g_options.height * 3;
  if (!g_options.pair_dir.empty()) {
    g_images[0] = read_bytes(g_options.pair_dir + "/img1_u8.bin", bytes);
    g_images[1] = read_bytes(g_options.pair_dir + "/img2_u8.bin", bytes);
  } else {
    std::mt19937 gen(1);
    for (auto& img : g_images) {
      img.resize(bytes);
      for (auto& b : img) b = static_cast<uint8_t>(gen());
    }
  }
  auto rt = recon::gpu::Runtime::create({});
  if (!rt.is_ok()) die(rt.status().to_string());
  g_runtime = std::move(rt).value();
  std::printf("device: %s\n", g_runtime->caps().device_name.c_str());

  for (Precision p : g_options.precisions) {
    for (int b : g_options.batches) {
      for (const std::string& input : g_options.inputs) {
        for (int idle : g_options.idle_ms) {
          const bool device = input == "device";
          std::string name = std::string("mast3r/") + recon::gpu::precision_name(p) + "/batch:" + std::to_string(b) +
                             "/" + std::to_string(g_options.width) + "x" + std::to_string(g_options.height) +
                             (device ? "/device_inputs" : "") +
                             (idle > 0 ? "/idle:" + std::to_string(idle) + "ms" : "");
          auto* bench =
              benchmark::RegisterBenchmark(
                  name.c_str(), [p, b, idle, device](benchmark::State& s) { bench_pair(s, p, b, idle, device); })
                  ->UseManualTime()
                  ->Unit(benchmark::kMillisecond);
          if (idle > 0) {
            bench->Iterations(20);  // 2 s of manual time would be minutes of idling
          } else {
            bench->MinTime(2.0);
          }
        }
      }
    }
    if (g_options.sequence >= 2) {
      std::vector<int> sides = {0};  // pairwise first: the baseline of the ratio
      sides.insert(sides.end(), g_options.pair_batches.begin(), g_options.pair_batches.end());
      for (int pb : sides) {
        std::string name = std::string("mast3r_sequence/") + recon::gpu::precision_name(p) +
                           (pb > 0 ? "/infer_batch_pb" + std::to_string(pb) + "/" : "/pairwise/") +
                           std::to_string(g_options.sequence) + "x" + std::to_string(g_options.width) + "x" +
                           std::to_string(g_options.height);
        benchmark::RegisterBenchmark(name.c_str(), [p, pb](benchmark::State& s) { bench_sequence(s, p, pb); })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond)
            ->MinTime(2.0);
      }
    }
    for (int pb : g_options.stream > 0 ? g_options.pair_batches : std::vector<int>{}) {
      const int stream = g_options.stream;
      std::string name = std::string("mast3r_stream/") + recon::gpu::precision_name(p) + "/infer_batch_pb" +
                         std::to_string(pb) + "/" + std::to_string(stream) + "_pairs/" +
                         std::to_string(g_options.width) + "x" + std::to_string(g_options.height);
      benchmark::RegisterBenchmark(name.c_str(),
                                   [p, pb, stream](benchmark::State& s) { bench_sequence(s, p, pb, stream); })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->MinTime(2.0);
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_runtime.reset();
  return 0;
}
