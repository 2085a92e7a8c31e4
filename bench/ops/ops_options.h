// What recon_bench_ops can be told, as flags (taken out of argv before Google Benchmark sees it)
// or environment variables; the flag wins. Defaults depend on the device: small shapes and no
// cache-defeating rings on a CPU device (lavapipe), MASt3R's shapes on a GPU.
#pragma once

#include <cstdint>
#include <string>

#include "bench/ops/device_peaks.h"
#include "gpu/capabilities.h"
#include "gpu/status.h"

namespace recon::bench {

struct OpsOptions {
  // --recon_shapes=full|small or RECON_OPS_SHAPES. Default: full on a GPU, small on a CPU device.
  std::string shapes;
  // --recon_cold_mib=N or RECON_OPS_COLD_MIB: the least bytes a memory-bound case's ring spans,
  // in MiB (several times the last-level cache, so that reads come from device memory).
  // Default 256 on a GPU (H100 L2: 50 MB, H200: 60 MB), 0 on a CPU device. -1: the default.
  int64_t cold_mib = -1;
  // --recon_list_cases=PATH or RECON_OPS_LIST_CASES: write the cases with their plans as JSON
  // (what torch_ops.py runs) and exit without benchmarking.
  std::string list_cases;
  // --recon_peak_gbps=, --recon_peak_tflops_f16=, --recon_peak_tflops_f32= (or RECON_OPS_PEAK_GBPS,
  // ...): the device's peaks; each one given replaces the datasheet figure.
  DevicePeaks peaks_override;
};

Result<OpsOptions> parse_ops_options(int* argc, char** argv);

// The options with the device's defaults filled in.
struct ResolvedOptions {
  bool full_shapes = false;
  uint64_t cold_bytes = 0;
  double flops_per_replay = 0;  // targets of plan_case (op_cases.h)
  double bytes_per_replay = 0;
  DevicePeaks peaks;
};
ResolvedOptions resolve_options(const OpsOptions& o, const gpu::Capabilities& caps);

}  // namespace recon::bench
