#include "bench/ops/device_peaks.h"

namespace recon::bench {
namespace {

struct KnownDevice {
  const char* name_part;  // matched in order, so a more specific name comes first
  DevicePeaks peaks;
};

// NVIDIA H100 and H200 datasheets (dense, boost clock). The SXM boards name themselves
// "NVIDIA H100 80GB HBM3" and "NVIDIA H200" through Vulkan.
const KnownDevice kKnown[] = {
    {"H200 NVL", {4800, 835.5, 60.3, "datasheet: NVIDIA H200 NVL"}},
    {"H200", {4800, 989.4, 66.9, "datasheet: NVIDIA H200 SXM"}},
    {"H100 PCIe", {2000, 756.5, 51.2, "datasheet: NVIDIA H100 PCIe"}},
    {"H100 NVL", {3900, 835.5, 59.8, "datasheet: NVIDIA H100 NVL"}},
    {"H100", {3350, 989.4, 66.9, "datasheet: NVIDIA H100 SXM"}},
};

}  // namespace

DevicePeaks nominal_peaks(const std::string& device_name) {
  for (const KnownDevice& d : kKnown) {
    if (device_name.find(d.name_part) != std::string::npos) return d.peaks;
  }
  return {};
}

}  // namespace recon::bench
