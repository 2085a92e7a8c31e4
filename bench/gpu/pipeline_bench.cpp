// Pipeline creation, cold against a warm VkPipelineCache: each round builds every embedded shader
// variant in a Runtime whose cache file does not exist yet (the baseline), saves the cache, then
// builds them again in a new Runtime that loads it (the subject). Both Runtimes are created
// outside the timed region; only the builds (shader module + vkCreateComputePipelines) count.
// main() turns the drivers' own disk caches off (unless the caller set them), so "cold" is cold.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <vector>

#include "bench/gpu/bench_util.h"
#include "gpu/shader_registry.h"

namespace recon::bench {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// Specialisation constants a variant needs to build as the ops use it; others take their defaults.
std::vector<uint32_t> spec_for(std::string_view shader) {
  if (shader.substr(0, 12) == "matmul_tiled") return {16};  // tile edge, as ops::matmul_tiled's default
  return {};
}

struct BuildResult {
  double seconds = 0;
  int built = 0;
  int failed = 0;  // variants the device cannot build (e.g. a missing extension); reported, not fatal
  Status first_error;
};

BuildResult build_all(gpu::Runtime& rt) {
  BuildResult r;
  const auto start = Clock::now();
  for (const gpu::ShaderBlob& blob : gpu::all_shaders()) {
    const std::vector<uint32_t> spec = spec_for(blob.name);
    auto p = rt.pipelines().get(blob.name, spec);
    if (p.is_ok()) {
      ++r.built;
    } else {
      if (r.failed++ == 0) r.first_error = p.status();
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

Result<std::unique_ptr<gpu::Runtime>> runtime_with_cache(const std::string& path) {
  gpu::RuntimeOptions options;
  options.pipeline_cache_path = path;
  return gpu::Runtime::create(options);
}

// A private directory for the cache files, removed when the benchmark ends.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/recon-bench-pipelines-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void pipeline_creation(benchmark::State& state) {
  TempDir dir;
  if (dir.path().empty()) return fail(state, unavailable("cannot create a temporary directory for the cache"));

  // Untimed: the first pipelines of a process also pay for one-time driver start-up (compiler
  // initialisation on lavapipe), which is not what a warm cache saves.
  static bool driver_warmed = false;
  if (!driver_warmed) {
    auto rt = runtime_with_cache("none");
    if (!rt.is_ok()) return fail(state, rt.status());
    (void)build_all(**rt);
    driver_warmed = true;
  }

  Samples cold, warm;
  int pipelines = 0, failed = 0;
  double cache_bytes = 0;
  bool cache_loaded = true;
  int round = 0;
  for (auto _ : state) {
    const std::string path = dir.path() + "/round" + std::to_string(round++) + ".bin";
    BuildResult c, w;
    {
      auto rt = runtime_with_cache(path);
      if (!rt.is_ok()) {
        fail(state, rt.status());
        break;
      }
      c = build_all(**rt);
      if (c.built == 0) {
        fail(state, c.first_error.with_context("no pipeline could be built"));
        break;
      }
      Status saved = (*rt)->pipeline_cache().save();
      if (!saved.is_ok()) {
        fail(state, saved.with_context("saving the pipeline cache"));
        break;
      }
    }
    std::error_code ec;
    cache_bytes = static_cast<double>(fs::file_size(path, ec));
    {
      auto rt = runtime_with_cache(path);
      if (!rt.is_ok()) {
        fail(state, rt.status());
        break;
      }
      cache_loaded = cache_loaded && (*rt)->pipeline_cache().state() == gpu::CacheState::kWarm;
      w = build_all(**rt);
    }
    state.SetIterationTime(w.seconds);
    cold.add(c.seconds / c.built);
    warm.add(w.seconds / std::max(w.built, 1));
    pipelines = c.built;
    failed = c.failed;
  }
  if (state.error_occurred() || cold.count() == 0) return;

  state.counters["pipelines"] = pipelines;
  state.counters["failed_variants"] = failed;
  state.counters["cold_ms_per_pipeline"] = cold.median() * 1e3;
  state.counters["warm_ms_per_pipeline"] = warm.median() * 1e3;
  state.counters["ratio_vs_baseline"] = cold.median() / warm.median();  // speed-up of the warm cache
  state.counters["cache_file_bytes"] = cache_bytes;                     // our 64-byte header + the driver's payload
  state.counters["cache_loaded"] = cache_loaded ? 1 : 0;
}

}  // namespace

void register_pipeline_benchmarks(const SuiteOptions& options) {
  benchmark::RegisterBenchmark("pipeline_creation/all_variants/warm_vs_cold", pipeline_creation)
      ->Iterations(options.pipeline_rounds)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

}  // namespace recon::bench
