// The op benchmarks' body and registration: each case replays its recorded graph (op_graph.h),
// timed with GPU timestamps (bench/gpu/gpu_timer.h), and reports per-application time, TFLOP/s or
// GB/s, and the fraction of the device's peak where the peak is known. Also writes the case list
// that torch_ops.py runs.
#pragma once

#include <string>
#include <vector>

#include "bench/ops/op_cases.h"
#include "bench/ops/ops_options.h"
#include "gpu/runtime.h"
#include "gpu/status.h"

namespace recon::bench {

void register_op_benchmarks(gpu::Runtime& rt, const std::vector<OpCase>& cases, const ResolvedOptions& options);
// Frees the operands of the last case run; call before the Runtime goes.
void release_op_buffers();

// The cases with their plans, as JSON: {"shapes", "cold_bytes", "device", "cases": [{"name", "op",
// "shape", "dtype", "params": {...}, "ring", "ops_per_replay", "flops", "bytes"}]}.
Status write_case_list(const std::string& path, const std::vector<OpCase>& cases, const ResolvedOptions& options,
                       const gpu::Capabilities& caps);

}  // namespace recon::bench
