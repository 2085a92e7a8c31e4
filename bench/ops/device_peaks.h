// The device's nominal peak figures, for reporting a benchmark as a fraction of what the hardware
// can do. Vulkan does not report them, so they come from the vendors' datasheets for the devices
// this project measures on (matched by device name), or from the caller (flags of
// recon_bench_ops). Reporting only: nothing may choose a kernel from them.
#pragma once

#include <string>

namespace recon::bench {

struct DevicePeaks {
  double memory_gbps = 0;  // device-memory bandwidth, 1 GB = 1e9 bytes; 0: unknown
  double f16_tflops = 0;   // dense fp16 tensor-core FLOP/s with fp32 accumulation, in 1e12; 0: unknown
  double f32_tflops = 0;   // fp32 FMA (no TF32), in 1e12; 0: unknown
  std::string source;      // "datasheet: NVIDIA H200 SXM", "flags", or "" when nothing is known
};

// Datasheet figures (boost clock, no sparsity) for the device named `device_name`, or all zero.
DevicePeaks nominal_peaks(const std::string& device_name);

}  // namespace recon::bench
