#include "bench/ops/ops_options.h"

#include <cstdlib>
#include <string_view>

#include "bench/gpu/bench_util.h"

namespace recon::bench {
namespace {

Result<double> parse_number(std::string_view name, std::string_view text) {
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !(v >= 0) || v > 1e9) {
    return invalid_argument(std::string(name) + ": not a number ≥ 0: '" + s + "'");
  }
  return v;
}

Status apply(OpsOptions& o, std::string_view key, std::string_view value, std::string_view name) {
  if (key == "shapes") {
    if (value != "full" && value != "small") {
      return invalid_argument(std::string(name) + ": 'full' or 'small', not '" + std::string(value) + "'");
    }
    o.shapes = value;
  } else if (key == "cold_mib") {
    RECON_ASSIGN_OR_RETURN(double v, parse_number(name, value));
    o.cold_mib = static_cast<int64_t>(v);
  } else if (key == "list_cases") {
    if (value.empty()) return invalid_argument(std::string(name) + ": empty path");
    o.list_cases = value;
  } else if (key == "peak_gbps") {
    RECON_ASSIGN_OR_RETURN(o.peaks_override.memory_gbps, parse_number(name, value));
  } else if (key == "peak_tflops_f16") {
    RECON_ASSIGN_OR_RETURN(o.peaks_override.f16_tflops, parse_number(name, value));
  } else if (key == "peak_tflops_f32") {
    RECON_ASSIGN_OR_RETURN(o.peaks_override.f32_tflops, parse_number(name, value));
  }
  return Status::ok();
}

}  // namespace

Result<OpsOptions> parse_ops_options(int* argc, char** argv) {
  OpsOptions o;
  constexpr std::string_view kKeys[] = {"shapes",    "cold_mib",        "list_cases",
                                        "peak_gbps", "peak_tflops_f16", "peak_tflops_f32"};
  RECON_RETURN_IF_ERROR(read_knobs(
      argc, argv, "RECON_OPS_", kKeys,
      [&](std::string_view key, std::string_view value, std::string_view name) { return apply(o, key, value, name); }));
  return o;
}

ResolvedOptions resolve_options(const OpsOptions& o, const gpu::Capabilities& caps) {
  const bool cpu = caps.device_type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  ResolvedOptions r;
  r.full_shapes = o.shapes.empty() ? !cpu : o.shapes == "full";
  r.cold_bytes = static_cast<uint64_t>(o.cold_mib >= 0 ? o.cold_mib : (cpu ? 0 : 256)) << 20;
  // A replay long enough that submission and timestamp overheads (~10 µs) stay under 1%: ≥ 1 ms
  // on an H100-class GPU; on a CPU driver a few milliseconds.
  r.flops_per_replay = cpu ? 2e7 : 2e11;
  r.bytes_per_replay = cpu ? 1e6 : 4e9;
  r.peaks = nominal_peaks(caps.device_name);
  const DevicePeaks& f = o.peaks_override;
  if (f.memory_gbps > 0 || f.f16_tflops > 0 || f.f32_tflops > 0) {
    if (f.memory_gbps > 0) r.peaks.memory_gbps = f.memory_gbps;
    if (f.f16_tflops > 0) r.peaks.f16_tflops = f.f16_tflops;
    if (f.f32_tflops > 0) r.peaks.f32_tflops = f.f32_tflops;
    r.peaks.source = r.peaks.source.empty() ? "flags" : r.peaks.source + ", with flags";
  }
  return r;
}

}  // namespace recon::bench
