// recon_bench_match: GPU descriptor matching (gpu/models/match/) in ms per pair, against a CPU
// baseline measured in the same run.
//
//   fast_match/<W>x<H>/<data>   FastMatcher::run on one pair of L2-normalised D = 24 maps: the
//                               official algorithm (S = 8, 10 iterations, border 3). `gpu_ms` is
//                               device time (timestamps), `wall_ms` submit-to-results on the host.
//   exhaustive/<W>x<H>/s8_top1_mutual   ExhaustiveMatcher with the S = 8 grid as queries.
// data: `random` (independent unit vectors: the walks wander before converging) or `shifted`
// (B = A moved by (5, 3) px plus noise, spatially smooth: converges like real descriptors).
//
// Baseline: bench/models/match_cpu_baseline.cpp, the same algorithm on the CPU (all cores), run
// once per benchmark on every 4th seed row and column (S = 32) and scaled by nearest-neighbour
// searches: baseline_ms = CPU ms per search × the searches the GPU run made. `cpu_agrees` = 1
// when the GPU matcher at S = 32 returns exactly the CPU's match set. ratio_vs_baseline =
// baseline_ms / gpu_ms (> 1: the GPU is faster). The official matcher was reported at ≈ 950 ms
// per pair on an RTX 4090 (spec §7); the target here is < 2 ms on an H100/H200.
//
// Size: 512x384 on a GPU, 128x96 on a CPU device (lavapipe) unless RECON_MATCH_SIZE=WxH is set.
// RECON_MATCH_TUNING=grid,qpt,pair,fixed,workgroup,tail_grid,update_grid,dedup,tensor overrides the kernel
// knobs (gpu::MatchTuning; 0 = default; missing trailing fields are 0).
// RECON_MATCH_SWEEP=1 (a built-in list) or a ';'-separated list of such settings: one more fast_match
// benchmark per setting and data kind (fast_match/<W>x<H>/<data>/<setting>), then a table of them
// sorted by gpu_ms, the best setting first.
// RECON_PROFILE_DISPATCHES=1 prints each fast_match benchmark's GPU time per dispatch (per step for
// match_nn and match_update; the timestamps serialise dispatches, so totals grow).
// Device: RECON_DEVICE (index or name substring), as for every recon tool.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/models/match_cpu_baseline.h"
#include "gpu/dispatch_profile.h"
#include "gpu/models/match/match.h"
#include "gpu/runtime.h"

namespace recon::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kDim = 24;

struct HostPair {
  int64_t h = 0, w = 0;
  std::vector<float> a, b;
};

void normalise(std::vector<float>& v) {
  for (size_t i = 0; i < v.size(); i += kDim) {
    double s = 0;
    for (int64_t c = 0; c < kDim; ++c) s += double(v[i + c]) * v[i + c];
    const float inv = static_cast<float>(1.0 / std::sqrt(s));
    for (int64_t c = 0; c < kDim; ++c) v[i + c] *= inv;
  }
}

std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// Box blur over the pixel grid, `passes` times (spatially correlated descriptors).
void blur(std::vector<float>& v, int64_t h, int64_t w, int passes) {
  std::vector<float> t(v.size());
  for (int p = 0; p < passes; ++p) {
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        for (int64_t c = 0; c < kDim; ++c) {
          float s = 0;
          int n = 0;
          for (int64_t dy = -1; dy <= 1; ++dy) {
            for (int64_t dx = -1; dx <= 1; ++dx) {
              const int64_t yy = y + dy, xx = x + dx;
              if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
              s += v[static_cast<size_t>((yy * w + xx) * kDim + c)];
              ++n;
            }
          }
          t[static_cast<size_t>((y * w + x) * kDim + c)] = s / static_cast<float>(n);
        }
      }
    }
    v.swap(t);
  }
}

HostPair make_pair_data(int64_t w, int64_t h, bool shifted) {
  HostPair p{h, w, {}, {}};
  const size_t n = static_cast<size_t>(h * w * kDim);
  if (!shifted) {
    p.a = gaussian(n, 1);
    p.b = gaussian(n, 2);
  } else {
    const int64_t dx = 5, dy = 3, bh = h + dy, bw = w + dx;
    std::vector<float> big = gaussian(static_cast<size_t>(bh * bw * kDim), 3);
    blur(big, bh, bw, 2);
    normalise(big);
    const std::vector<float> noise = gaussian(n, 4);
    p.a.resize(n);
    p.b.resize(n);
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        for (int64_t c = 0; c < kDim; ++c) {
          const size_t o = static_cast<size_t>((y * w + x) * kDim + c);
          p.a[o] = big[static_cast<size_t>((y * bw + x) * kDim + c)];
          p.b[o] = big[static_cast<size_t>(((y + dy) * bw + x + dx) * kDim + c)] + 0.05f * noise[o];
        }
      }
    }
  }
  normalise(p.a);
  normalise(p.b);
  return p;
}

struct Env {
  int64_t w = 512, h = 384;
  gpu::MatchTuning tuning;
  std::vector<std::string> sweep;  // settings "grid,qpt,pair,fixed,workgroup,tail_grid,update_grid,dedup,tensor"
};

// Knob settings that the issue-6 sweep compares (docs/MATCHING.md): queries per invocation, the
// workgroup size, the grids of iteration 1, of later steps and of match_update, de-duplication.
constexpr const char* kDefaultSweep[] = {
    "0,0,0,0,0,0,0,0",     "0,0,0,0,0,0,0,1",     "0,0,0,1,0,0,0,0",     "0,8,0,0,0,0,0,0",   "0,8,1,0,0,0,0,0",
    "0,8,0,0,128,0,0,0",   "0,8,1,0,128,0,0,0",   "528,8,0,0,0,0,0,0",   "0,6,0,0,0,0,0,0",   "0,6,1,0,0,0,0,0",
    "528,0,0,0,0,0,0,0",   "792,0,0,0,0,0,0,0",   "0,0,0,0,0,132,0,0",   "0,0,0,0,0,264,0,0", "0,0,0,0,0,528,0,0",
    "0,0,0,0,0,264,264,0", "0,0,0,0,0,264,528,0", "0,0,0,0,0,132,132,0", "0,0,4,0,0,0,0,0",   "0,0,4,0,128,0,0,0",
    "0,2,4,0,0,0,0,0",     "0,2,8,0,0,0,0,0",
};

gpu::MatchTuning parse_tuning(const std::string& s) {
  int v[9] = {};
  std::sscanf(s.c_str(), "%d,%d,%d,%d,%d,%d,%d,%d,%d", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]);
  gpu::MatchTuning t;
  t.grid = v[0];
  t.queries_per_thread = v[1];
  t.pair = v[2];
  t.fixed = v[3];
  t.workgroup = v[4];
  t.tail_grid = v[5];
  t.update_grid = v[6];
  t.dedup = v[7];
  t.tensor = v[8];
  return t;
}

Env read_env(const gpu::Capabilities& caps) {
  Env e;
  if (caps.device_type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    e.w = 128;
    e.h = 96;
  }
  if (const char* s = std::getenv("RECON_MATCH_SIZE")) {
    long w = 0, h = 0;
    if (std::sscanf(s, "%ldx%ld", &w, &h) == 2 && w > 0 && h > 0) {
      e.w = w;
      e.h = h;
    }
  }
  if (const char* s = std::getenv("RECON_MATCH_TUNING")) e.tuning = parse_tuning(s);
  if (const char* s = std::getenv("RECON_MATCH_SWEEP")) {
    const std::string list = s;
    if (list == "1") {
      e.sweep.assign(std::begin(kDefaultSweep), std::end(kDefaultSweep));
    } else {
      for (size_t b = 0; b < list.size();) {
        const size_t end = std::min(list.find(';', b), list.size());
        if (end > b) e.sweep.push_back(list.substr(b, end - b));
        b = end + 1;
      }
    }
  }
  return e;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void fail(benchmark::State& state, const Status& s) {
  state.SkipWithError(s.to_string().c_str());
}

// Device milliseconds of the last run (sum of the graph's phases), or 0 without timestamps.
double device_ms(std::vector<std::pair<std::string, double>> phases) {
  double ms = 0;
  for (const auto& p : phases) ms += p.second;
  return ms;
}

struct Uploaded {
  gpu::Tensor a, b;
};

Result<Uploaded> upload(gpu::Runtime& rt, const HostPair& p) {
  Uploaded u;
  RECON_ASSIGN_OR_RETURN(
      u.a, gpu::Tensor::from_host(rt, gpu::DType::kF32, {p.h, p.w, kDim}, p.a.data(), p.a.size() * sizeof(float)));
  RECON_ASSIGN_OR_RETURN(
      u.b, gpu::Tensor::from_host(rt, gpu::DType::kF32, {p.h, p.w, kDim}, p.b.data(), p.b.size() * sizeof(float)));
  return u;
}

// CPU ms per nearest-neighbour search on this pair (S = 32 subset), and whether the GPU agrees.
struct Baseline {
  double ms_per_search = 0;
  bool agrees = false;
  int64_t searches = 0;
};

Result<Baseline> measure_baseline(gpu::Runtime& rt, const HostPair& p, const Uploaded& u, const Env& env) {
  constexpr int kSubsample = 32;
  const auto t0 = Clock::now();
  const CpuFastMatches cpu = cpu_fast_reciprocal(p.a.data(), p.h, p.w, p.b.data(), p.h, p.w, kDim, kSubsample, 10, 3);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  gpu::FastMatchOptions o;
  o.subsample = kSubsample;
  o.tuning = env.tuning;
  RECON_ASSIGN_OR_RETURN(gpu::MatchResult r, gpu::match_fast_reciprocal(rt, u.a, u.b, o));
  RECON_ASSIGN_OR_RETURN(gpu::HostMatches h, r.to_host(rt));
  Baseline b;
  b.searches = cpu.queries;
  b.ms_per_search = ms / static_cast<double>(std::max<int64_t>(cpu.queries, 1));
  b.agrees = h.idx_a == cpu.idx_a && h.idx_b == cpu.idx_b && h.active_per_step == cpu.active;
  return b;
}

// Google Benchmark calls a benchmark several times while it sizes the run: the data and the CPU
// baseline are made once per data kind.
struct Prepared {
  HostPair pair;
  Uploaded up;
  Baseline base;
};

std::unique_ptr<Prepared> g_prepared[2];  // freed by release_prepared() before the Runtime goes

void release_prepared() {
  g_prepared[0].reset();
  g_prepared[1].reset();
}

Result<const Prepared*> prepare(gpu::Runtime& rt, const Env& env, bool shifted) {
  std::unique_ptr<Prepared>& p = g_prepared[shifted ? 1 : 0];
  if (!p) {
    auto fresh = std::make_unique<Prepared>();
    fresh->pair = make_pair_data(env.w, env.h, shifted);
    RECON_ASSIGN_OR_RETURN(fresh->up, upload(rt, fresh->pair));
    RECON_ASSIGN_OR_RETURN(fresh->base, measure_baseline(rt, fresh->pair, fresh->up, env));
    p = std::move(fresh);
  }
  return p.get();
}

// One finished fast_match benchmark, for the sweep table.
struct SweepRow {
  std::string data, setting;
  double gpu_ms = 0, iter1a_ms = 0, iter1b_ms = 0, rest_ms = 0;
  int64_t searches = 0;
};
std::vector<SweepRow> g_sweep_rows;

void fast_match(benchmark::State& state, gpu::Runtime* rt, Env env, bool shifted, const std::string& setting) {
  auto prep = prepare(*rt, env, shifted);
  if (!prep.is_ok()) return fail(state, prep.status());
  const Uploaded* up = &(*prep)->up;
  const Baseline* base = &(*prep)->base;
  gpu::FastMatchOptions o;
  o.tuning = env.tuning;
  auto shape = gpu::MatchShape::of(up->a, up->b);
  if (!shape.is_ok()) return fail(state, shape.status());
  auto matcher = gpu::FastMatcher::create(*rt, *shape, o);
  if (!matcher.is_ok()) return fail(state, matcher.status());
  gpu::FastMatcher& m = **matcher;
  // Warm-up: pipelines, first recording.
  if (auto r = m.run(up->a, up->b); !r.is_ok()) return fail(state, r.status());
  gpu::reset_dispatch_profile();

  std::vector<double> gpu_ms, wall_ms;
  std::vector<std::pair<std::string, double>> phases_sum;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto r = m.run(up->a, up->b);
    const double wall = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!r.is_ok()) return fail(state, r.status());
    auto phases = m.phase_ms();
    const double dev = device_ms(phases);
    if (phases_sum.empty())
      phases_sum = phases;
    else
      for (size_t i = 0; i < phases.size() && i < phases_sum.size(); ++i) phases_sum[i].second += phases[i].second;
    gpu_ms.push_back(dev > 0 ? dev : wall);
    wall_ms.push_back(wall);
    state.SetIterationTime((dev > 0 ? dev : wall) * 1e-3);
  }
  auto host = m.result().to_host(*rt);
  if (!host.is_ok()) return fail(state, host.status());
  int64_t searches = 0, active = 0;
  for (int32_t q : host->queries_per_step) searches += q;
  for (size_t k = 0; k + 1 < host->active_per_step.size(); ++k) active += host->active_per_step[k];
  const double g = median(gpu_ms);
  const double baseline_ms = base->ms_per_search * static_cast<double>(searches);
  const double n_db = static_cast<double>(env.w * env.h);
  state.counters["gpu_ms"] = g;
  state.counters["wall_ms"] = median(wall_ms);
  state.counters["pairs_per_s"] = g > 0 ? 1e3 / g : 0;
  state.counters["baseline_ms"] = baseline_ms;
  state.counters["ratio_vs_baseline"] = g > 0 ? baseline_ms / g : 0;
  state.counters["cpu_agrees"] = base->agrees ? 1 : 0;
  state.counters["matches"] = static_cast<double>(host->size());
  state.counters["seeds"] = static_cast<double>(m.seed_count());
  state.counters["nn_searches"] = static_cast<double>(searches);  // distinct query pixels searched
  state.counters["active_sum"] = static_cast<double>(active);     // searches without de-duplication
  state.counters["steps_used"] = static_cast<double>(
      std::count_if(host->active_per_step.begin(), host->active_per_step.end() - 1, [](int32_t v) { return v > 0; }));
  state.counters["unconverged"] = host->active_per_step.back();
  // Arithmetic the NN searches needed: 2·D flops per (query, database pixel).
  state.counters["TFLOP/s"] = g > 0 ? 2.0 * kDim * static_cast<double>(searches) * n_db / (g * 1e-3) / 1e12 : 0;
  const double iters = static_cast<double>(std::max<size_t>(gpu_ms.size(), 1));
  double loop = 0, late = 0;
  for (const auto& [name, ms] : phases_sum) {
    if (name.rfind("iter", 0) == 0) {
      loop += ms;
      if (name != "iter1a" && name != "iter1b" && name != "iter2") late += ms;
      if (name == "iter1a" || name == "iter1b" || name == "iter2" || name == "iter3") {
        state.counters[name + "_ms"] = ms / iters;
      }
    } else {
      state.counters[name + "_ms"] = ms / iters;
    }
  }
  state.counters["loop_ms"] = loop / iters;
  state.counters["iter3_on_ms"] = late / iters;  // iterations 3..10: the tail, and the cost of empty steps
  std::string label = "active per step: ";
  for (int32_t v : host->active_per_step) label += std::to_string(v) + " ";
  label += "| searches per step: ";
  for (int32_t v : host->queries_per_step) label += std::to_string(v) + " ";
  state.SetLabel(label);
  if (gpu::dispatch_profiling_enabled()) {
    std::printf("fast_match %s %s, %s, %lld runs (match_nn rows: count index = step, or 128 + step; grid; n_db):\n%s",
                shifted ? "shifted" : "random", setting.c_str(), label.c_str(),
                static_cast<long long>(state.iterations()), gpu::format_dispatch_profile(24).c_str());
  }
  if (!setting.empty()) {
    auto counter = [&](const char* name) {
      auto it = state.counters.find(name);
      return it == state.counters.end() ? 0.0 : static_cast<double>(it->second);
    };
    g_sweep_rows.push_back({shifted ? "shifted" : "random", setting, g, counter("iter1a_ms"), counter("iter1b_ms"),
                            g - counter("iter1a_ms") - counter("iter1b_ms"), searches});
  }
}

// The sweep's table, fastest first per data kind; a setting appears once per Google Benchmark
// repetition (the last one counts).
void print_sweep() {
  if (g_sweep_rows.empty()) return;
  std::vector<SweepRow> rows;
  for (auto it = g_sweep_rows.rbegin(); it != g_sweep_rows.rend(); ++it) {
    const bool seen = std::any_of(rows.begin(), rows.end(),
                                  [&](const SweepRow& r) { return r.data == it->data && r.setting == it->setting; });
    if (!seen) rows.push_back(*it);
  }
  std::sort(rows.begin(), rows.end(), [](const SweepRow& x, const SweepRow& y) {
    return x.data != y.data ? x.data > y.data : x.gpu_ms < y.gpu_ms;
  });
  std::printf("\nsweep (grid,qpt,pair,fixed,workgroup,tail_grid,update_grid,dedup), GPU ms per pair:\n");
  std::printf("%-8s %-28s %8s %9s %9s %8s %9s\n", "data", "setting", "gpu_ms", "iter1a", "iter1b", "rest", "searches");
  std::string last;
  for (const SweepRow& r : rows) {
    std::printf("%-8s %-28s %8.3f %9.3f %9.3f %8.3f %9lld%s\n", r.data.c_str(), r.setting.c_str(), r.gpu_ms,
                r.iter1a_ms, r.iter1b_ms, r.rest_ms, static_cast<long long>(r.searches),
                r.data != last ? "   <- best" : "");
    last = r.data;
  }
}

void exhaustive(benchmark::State& state, gpu::Runtime* rt, Env env) {
  auto prep = prepare(*rt, env, true);
  if (!prep.is_ok()) return fail(state, prep.status());
  const Uploaded* up = &(*prep)->up;
  const Baseline* base = &(*prep)->base;
  gpu::ExhaustiveMatchOptions o;
  o.subsample = 8;
  o.top_k = 1;
  o.reciprocal = true;
  o.tuning = env.tuning;
  auto shape = gpu::MatchShape::of(up->a, up->b);
  if (!shape.is_ok()) return fail(state, shape.status());
  auto matcher = gpu::ExhaustiveMatcher::create(*rt, *shape, o);
  if (!matcher.is_ok()) return fail(state, matcher.status());
  gpu::ExhaustiveMatcher& m = **matcher;
  if (auto r = m.run(up->a, up->b); !r.is_ok()) return fail(state, r.status());
  std::vector<double> gpu_ms;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto r = m.run(up->a, up->b);
    const double wall = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!r.is_ok()) return fail(state, r.status());
    const double dev = device_ms(m.graph().timings());
    gpu_ms.push_back(dev > 0 ? dev : wall);
    state.SetIterationTime(gpu_ms.back() * 1e-3);
  }
  auto host = m.result().to_host(*rt);
  if (!host.is_ok()) return fail(state, host.status());
  const double searches = 2.0 * static_cast<double>(m.query_count());  // forward + reverse, k = 1
  const double g = median(gpu_ms);
  const double baseline_ms = base->ms_per_search * searches;
  state.counters["gpu_ms"] = g;
  state.counters["baseline_ms"] = baseline_ms;
  state.counters["ratio_vs_baseline"] = g > 0 ? baseline_ms / g : 0;
  state.counters["matches"] = static_cast<double>(host->size());
  state.counters["TFLOP/s"] =
      g > 0 ? 2.0 * kDim * searches * static_cast<double>(env.w * env.h) / (g * 1e-3) / 1e12 : 0;
}

}  // namespace

void release_match_bench_data() {
  release_prepared();
}

}  // namespace recon::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  recon::gpu::RuntimeOptions options;
  options.pipeline_cache_path = "none";
  auto rt = recon::gpu::Runtime::create(options);
  if (!rt.is_ok()) {
    std::fprintf(stderr, "recon_bench_match: no GPU runtime: %s\n", rt.status().to_string().c_str());
    return 1;
  }
  recon::gpu::Runtime* r = rt->get();
  const recon::bench::Env env = recon::bench::read_env(r->caps());
  benchmark::AddCustomContext("recon_device", r->caps().device_name);
  benchmark::AddCustomContext("recon_driver", r->caps().driver_name + " " + r->caps().driver_info);
  const std::string size = std::to_string(env.w) + "x" + std::to_string(env.h);
  for (const char* data : {"random", "shifted"}) {
    const bool shifted = std::string(data) == "shifted";
    benchmark::RegisterBenchmark(("fast_match/" + size + "/" + data).c_str(), recon::bench::fast_match, r, env, shifted,
                                 std::string())
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    for (const std::string& setting : env.sweep) {
      recon::bench::Env e = env;
      e.tuning = recon::bench::parse_tuning(setting);
      benchmark::RegisterBenchmark(("fast_match/" + size + "/" + data + "/" + setting).c_str(),
                                   recon::bench::fast_match, r, e, shifted, setting)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::RegisterBenchmark(("exhaustive/" + size + "/s8_top1_mutual").c_str(), recon::bench::exhaustive, r, env)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RunSpecifiedBenchmarks();
  recon::bench::print_sweep();
  benchmark::Shutdown();
  recon::bench::release_match_bench_data();
  return 0;
}
