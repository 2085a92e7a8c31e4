// recon_bench_runtime: Google Benchmark suite for the GPU runtime (pools, pipeline cache, graph
// replay, copies). Every benchmark reports its unit as counters plus `ratio_vs_baseline`, how many
// times faster the subject is than a baseline measured in the same benchmark (> 1: faster).
// Device: RECON_DEVICE (index or name substring), as for every recon tool.
// Own flags (see SuiteOptions): --recon_copy_mib=, --recon_copy_rep_mib=, --recon_pipeline_rounds=.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "bench/gpu/bench_util.h"
#include "gpu/runtime.h"

namespace {

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%x", v);
  return buf;
}

void add_device_context(const recon::gpu::Capabilities& caps) {
  benchmark::AddCustomContext("recon_device", caps.device_name);
  benchmark::AddCustomContext("recon_device_type", recon::gpu::device_type_name(caps.device_type));
  benchmark::AddCustomContext("recon_driver", caps.driver_name + " " + caps.driver_info);
  benchmark::AddCustomContext("recon_vendor_device", hex(caps.vendor_id) + ":" + hex(caps.device_id));
  benchmark::AddCustomContext("recon_max_storage_buffer_range", std::to_string(caps.max_storage_buffer_range));
  benchmark::AddCustomContext("recon_max_memory_allocation_size", std::to_string(caps.max_memory_allocation_size));
  benchmark::AddCustomContext("recon_timestamp_period_ns", std::to_string(caps.timestamp_period_ns));
}

}  // namespace

int main(int argc, char** argv) {
  // The pipeline-cache benchmark needs a cold start to be cold: keep the drivers' own on-disk
  // shader caches out of it (NVIDIA, Mesa) unless the caller decided otherwise.
  setenv("__GL_SHADER_DISK_CACHE", "0", /*overwrite=*/0);
  setenv("MESA_SHADER_CACHE_DISABLE", "true", /*overwrite=*/0);

  auto options = recon::bench::parse_options(&argc, argv);
  if (!options.is_ok()) {
    std::fprintf(stderr, "recon_bench_runtime: %s\n", options.status().to_string().c_str());
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

  recon::gpu::RuntimeOptions rt_options;
  rt_options.pipeline_cache_path = "none";
  auto rt = recon::gpu::Runtime::create(rt_options);
  if (!rt.is_ok()) {
    std::fprintf(stderr, "recon_bench_runtime: no GPU runtime: %s\n", rt.status().to_string().c_str());
    return 1;
  }
  add_device_context((*rt)->caps());

  recon::bench::register_pool_benchmarks(**rt);
  recon::bench::register_pipeline_benchmarks(**rt, *options);
  recon::bench::register_graph_benchmarks(**rt);
  recon::bench::register_copy_benchmarks(**rt, *options);

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  recon::bench::release_copy_buffers();
  // With RECON_VALIDATION=1 the suite doubles as a check of its own Vulkan usage.
  const recon::gpu::Context& ctx = (*rt)->context();
  if (ctx.validation_enabled()) {
    std::fprintf(stderr, "recon_bench_runtime: %llu validation error(s)%s%s\n",
                 static_cast<unsigned long long>(ctx.validation_error_count()),
                 ctx.validation_error_count() ? "; last: " : "", ctx.last_validation_error().c_str());
    if (ctx.validation_error_count() != 0) return 1;
  }
  return 0;
}
