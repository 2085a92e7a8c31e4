// Pipeline creation, cold against a warm VkPipelineCache: each round builds every embedded shader
// variant in a Runtime whose cache file does not exist yet (the baseline), saves the cache, then
// builds them again in a new Runtime that loads it (the subject). Both Runtimes are created
// outside the timed region; only the builds (shader module + vkCreateComputePipelines) count.
// main() turns the drivers' own disk caches off (unless the caller set them), so "cold" is cold.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
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

// Cooperative-matrix variants (named "*coopmat*" or "*_cm_*") only build where the device has
// VK_NV_cooperative_matrix; elsewhere creating them is invalid usage, so they are skipped.
bool needs_coopmat(std::string_view shader) {
  return shader.find("coopmat") != std::string_view::npos || shader.find("_cm_") != std::string_view::npos;
}

struct BuildResult {
  double seconds = 0;
  int built = 0;
  int skipped = 0;  // needs_coopmat() variants on a device without cooperative matrices
  // Variants this device cannot build (e.g. cooperative-matrix shaders on lavapipe): counted and
  // logged, not fatal.
  std::vector<std::string> failures;
};

BuildResult build_all(gpu::Runtime& rt) {
  BuildResult r;
  const auto start = Clock::now();
  const bool coopmat = rt.caps().nv_cooperative_matrix;
  for (const gpu::ShaderBlob& blob : gpu::all_shaders()) {
    if (!coopmat && needs_coopmat(blob.name)) {
      ++r.skipped;
      continue;
    }
    const std::vector<uint32_t> spec = spec_for(blob.name);
    auto p = rt.pipelines().get(blob.name, spec);
    if (p.is_ok()) {
      ++r.built;
    } else {
      r.failures.push_back(p.status().to_string());
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

  // Untimed: the first pipeline of a process also pays for one-time driver start-up (compiler
  // initialisation on lavapipe), which is not what a warm cache saves.
  static bool driver_warmed = false;
  if (!driver_warmed) {
    auto rt = runtime_with_cache("none");
    if (!rt.is_ok()) return fail(state, rt.status());
    (void)(*rt)->pipelines().get("fill_f32");
    driver_warmed = true;
  }

  Samples cold, warm;
  int pipelines = 0, skipped = 0;
  std::vector<std::string> failures;
  double cache_bytes = 0;
  double first_cold_s = 0;
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
        fail(state, internal_error("no pipeline could be built; first error: " +
                                   (c.failures.empty() ? std::string("none") : c.failures.front())));
        break;
      }
      Status saved = (*rt)->pipeline_cache().save();
      if (!saved.is_ok()) {
        fail(state, saved.with_context("saving the pipeline cache"));
        break;
      }
    }
    std::error_code ec;
    const auto file_bytes = fs::file_size(path, ec);
    cache_bytes = ec ? 0 : static_cast<double>(file_bytes);
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
    if (cold.count() == 0) first_cold_s = c.seconds / c.built;
    cold.add(c.seconds / c.built);
    warm.add(w.seconds / std::max(w.built, 1));
    pipelines = c.built;
    skipped = c.skipped;
    failures = std::move(c.failures);
  }
  if (state.error_occurred() || cold.count() == 0) return;

  state.counters["pipelines"] = pipelines;
  state.counters["skipped_variants"] = skipped;
  state.counters["failed_variants"] = static_cast<double>(failures.size());
  for (const std::string& f : failures) std::fprintf(stderr, "pipeline_creation: variant not built: %s\n", f.c_str());
  state.counters["cold_ms_per_pipeline"] = cold.median() * 1e3;
  // The first round against the median: a later cold round that is much faster means the driver
  // keeps pipelines across devices in one process, and "cold" is only cold in round one.
  state.counters["first_cold_ms_per_pipeline"] = first_cold_s * 1e3;
  state.counters["warm_ms_per_pipeline"] = warm.median() * 1e3;
  state.counters["ratio_vs_baseline"] = cold.median() / warm.median();  // speed-up of the warm cache
  state.counters["cache_file_bytes"] = cache_bytes;                     // our 64-byte header + the driver's payload
  state.counters["cache_loaded"] = cache_loaded ? 1 : 0;
}

}  // namespace

void register_pipeline_benchmarks(gpu::Runtime& rt, const SuiteOptions& options) {
  int rounds = options.pipeline_rounds;
  if (rounds == 0) rounds = rt.caps().device_type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 1 : 3;
  benchmark::RegisterBenchmark("pipeline_creation/all_variants/warm_vs_cold", pipeline_creation)
      ->Iterations(rounds)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

}  // namespace recon::bench
