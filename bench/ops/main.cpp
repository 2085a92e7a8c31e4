// recon_bench_ops: Google Benchmark suite for the op library at MASt3R's shapes (GEMM, attention,
// conv2d in TFLOP/s; LayerNorm, softmax, elementwise, cast, transpose, upsample in GB/s), fp32 and
// fp16, each as a fraction of the device's peak where known. The PyTorch side of the comparison
// is bench/ops/torch_ops.py; bench/scripts/run-ops-bench.sh runs both and writes the ratio table.
// Device: RECON_DEVICE (index or name substring), as for every recon tool.
// Own flags (ops_options.h): --recon_shapes=, --recon_cold_mib=, --recon_list_cases=,
// --recon_peak_gbps=, --recon_peak_tflops_f16=, --recon_peak_tflops_f32=.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "bench/ops/op_bench.h"
#include "bench/ops/ops_options.h"
#include "gpu/runtime.h"

namespace {

void add_context(const recon::gpu::Capabilities& caps, const recon::bench::ResolvedOptions& o) {
  benchmark::AddCustomContext("recon_device", caps.device_name);
  benchmark::AddCustomContext("recon_device_type", recon::gpu::device_type_name(caps.device_type));
  benchmark::AddCustomContext("recon_driver", caps.driver_name + " " + caps.driver_info);
  benchmark::AddCustomContext("recon_shapes", o.full_shapes ? "full" : "small");
  benchmark::AddCustomContext("recon_cold_bytes", std::to_string(o.cold_bytes));
  benchmark::AddCustomContext("recon_peak_gbps", std::to_string(o.peaks.memory_gbps));
  benchmark::AddCustomContext("recon_peak_tflops_f16", std::to_string(o.peaks.f16_tflops));
  benchmark::AddCustomContext("recon_peak_tflops_f32", std::to_string(o.peaks.f32_tflops));
  benchmark::AddCustomContext("recon_peak_source", o.peaks.source.empty() ? "unknown" : o.peaks.source);
}

}  // namespace

int main(int argc, char** argv) {
  auto options = recon::bench::parse_ops_options(&argc, argv);
  if (!options.is_ok()) {
    std::fprintf(stderr, "recon_bench_ops: %s\n", options.status().to_string().c_str());
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

  recon::gpu::RuntimeOptions rt_options;
  rt_options.pipeline_cache_path = "none";
  auto rt = recon::gpu::Runtime::create(rt_options);
  if (!rt.is_ok()) {
    std::fprintf(stderr, "recon_bench_ops: no GPU runtime: %s\n", rt.status().to_string().c_str());
    return 1;
  }
  const recon::gpu::Capabilities& caps = (*rt)->caps();
  const recon::bench::ResolvedOptions resolved = recon::bench::resolve_options(*options, caps);
  const auto cases = recon::bench::op_cases(resolved.full_shapes);
  if (!options->list_cases.empty()) {
    const recon::Status s = recon::bench::write_case_list(options->list_cases, cases, resolved, caps);
    if (!s.is_ok()) std::fprintf(stderr, "recon_bench_ops: %s\n", s.to_string().c_str());
    return s.is_ok() ? 0 : 1;
  }
  add_context(caps, resolved);
  recon::bench::register_op_benchmarks(**rt, cases, resolved);

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  recon::bench::release_op_buffers();
  // With RECON_VALIDATION=1 the suite doubles as a check of its own Vulkan usage.
  const recon::gpu::Context& ctx = (*rt)->context();
  if (ctx.validation_enabled()) {
    std::fprintf(stderr, "recon_bench_ops: %llu validation error(s)%s%s\n",
                 static_cast<unsigned long long>(ctx.validation_error_count()),
                 ctx.validation_error_count() ? "; last: " : "", ctx.last_validation_error().c_str());
    if (ctx.validation_error_count() != 0) return 1;
  }
  return 0;
}
