#include "bench/ops/op_bench.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "bench/gpu/bench_util.h"
#include "bench/gpu/clock_warmup.h"
#include "bench/gpu/gpu_timer.h"
#include "bench/ops/op_graph.h"

namespace recon::bench {
namespace {

// The operands of one case at a time, kept while Google Benchmark calls the case repeatedly to
// size its iteration count, so they are uploaded and the graph recorded once.
struct CurrentCase {
  std::string name;
  BuiltCase built;
};
std::unique_ptr<CurrentCase> g_current;

Result<BuiltCase*> built_case(gpu::Runtime& rt, const OpCase& c, const CasePlan& plan) {
  if (g_current && g_current->name == c.name()) return &g_current->built;
  g_current.reset();
  rt.pool(gpu::MemoryRole::kActivations).trim(/*all=*/true);  // the previous case's buffers
  RECON_ASSIGN_OR_RETURN(BuiltCase b, build_case(rt, c, plan));
  RECON_RETURN_IF_ERROR(b.graph->run().with_context("first replay of " + c.name()));  // records; warms up
  // The GPU idled while the case was built: replay until its clock is up again. Google Benchmark's
  // later calls of the same case follow without a pause, so once per case is enough.
  RECON_RETURN_IF_ERROR(warm_up_clocks([&] { return b.graph->run(); }, clock_warmup_seconds(rt.caps())));
  g_current = std::make_unique<CurrentCase>(CurrentCase{c.name(), std::move(b)});
  return &g_current->built;
}

std::string params_text(const OpCase& c) {
  std::string s;
  for (const auto& [k, v] : c.params) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s;
}

double peak_for(const OpCase& c, const DevicePeaks& peaks) {
  if (!c.compute_bound()) return peaks.memory_gbps;
  return c.dtype == gpu::DType::kF16 ? peaks.f16_tflops : peaks.f32_tflops;
}

void op_benchmark(benchmark::State& state, gpu::Runtime* rt, OpCase c, CasePlan plan, DevicePeaks peaks) {
  auto built = built_case(*rt, c, plan);
  if (!built.is_ok()) return fail(state, built.status());
  gpu::Graph& graph = *(*built)->graph;
  auto timer = GpuTimer::create(rt->context());
  if (!timer.is_ok()) return fail(state, timer.status());
  auto replay = [&]() -> Status { return graph.submit().status(); };

  Samples samples;
  for (auto _ : state) {
    auto t = (*timer)->time(replay);
    if (!t.is_ok()) {
      fail(state, t.status());
      break;
    }
    state.SetIterationTime(*t);
    samples.add(*t);
  }
  if (state.error_occurred() || samples.count() == 0) return;

  const double per_op = samples.median() / plan.ops_per_replay;
  state.counters["us_per_op"] = per_op * 1e6;
  double rate = 0;
  if (c.compute_bound()) {
    rate = c.flops() / per_op / 1e12;
    state.counters["TFLOP/s"] = rate;
  } else {
    rate = c.bytes() / per_op / 1e9;
    state.counters["GB/s"] = rate;
    state.counters["ring_MiB"] = static_cast<double>(ring_slot_bytes(c)) * plan.ring / kMiB;
  }
  if (const double peak = peak_for(c, peaks); peak > 0) state.counters["peak_fraction"] = rate / peak;
  state.counters["ops_per_replay"] = plan.ops_per_replay;
  state.counters["dispatches_per_op"] = static_cast<double>(graph.dispatch_count()) / plan.ops_per_replay;
  state.counters["timestamps"] = (*timer)->uses_timestamps() ? 1 : 0;
  const std::string& path = (*built)->path;
  state.SetLabel((path.empty() ? "" : path + " ") + params_text(c));
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) continue;  // no control characters in names
    out += ch;
  }
  return out + "\"";
}

PlanTargets targets_of(const ResolvedOptions& o) {
  return {o.cold_bytes, o.flops_per_replay, o.bytes_per_replay};
}

}  // namespace

void register_op_benchmarks(gpu::Runtime& rt, const std::vector<OpCase>& cases, const ResolvedOptions& options) {
  for (const OpCase& c : cases) {
    benchmark::RegisterBenchmark(c.name().c_str(), op_benchmark, &rt, c, plan_case(c, targets_of(options)),
                                 options.peaks)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

void release_op_buffers() {
  g_current.reset();
}

Status write_case_list(const std::string& path, const std::vector<OpCase>& cases, const ResolvedOptions& options,
                       const gpu::Capabilities& caps) {
  std::ostringstream js;
  js << "{\n  \"device\": " << json_string(caps.device_name) << ",\n  \"shapes\": \""
     << (options.full_shapes ? "full" : "small") << "\",\n  \"cold_bytes\": " << options.cold_bytes
     << ",\n  \"cases\": [\n";
  for (size_t i = 0; i < cases.size(); ++i) {
    const OpCase& c = cases[i];
    const CasePlan plan = plan_case(c, targets_of(options));
    js << "    {\"name\": " << json_string(c.name()) << ", \"op\": " << json_string(c.op)
       << ", \"shape\": " << json_string(c.shape) << ", \"dtype\": " << json_string(c.dtype_label())
       << ", \"params\": {";
    for (size_t p = 0; p < c.params.size(); ++p) {
      js << (p ? ", " : "") << json_string(c.params[p].first) << ": " << c.params[p].second;
    }
    char work[96];
    std::snprintf(work, sizeof(work), "\"flops\": %.17g, \"bytes\": %.17g", c.flops(), c.bytes());
    js << "}, \"ring\": " << plan.ring << ", \"ops_per_replay\": " << plan.ops_per_replay << ", " << work << "}"
       << (i + 1 < cases.size() ? "," : "") << "\n";
  }
  js << "  ]\n}\n";
  std::ofstream f(path);
  f << js.str();
  f.close();
  if (!f) return unavailable("cannot write the case list to " + path);
  return Status::ok();
}

}  // namespace recon::bench
