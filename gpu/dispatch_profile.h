// Opt-in GPU time per dispatch, for finding where a model's time goes on a real device.
// With RECON_PROFILE_DISPATCHES=1 in the environment every Graph writes a timestamp after each
// dispatch, and each completed run adds its dispatch times to one process-wide table keyed by
// pipeline (shader + specialisation constants), workgroup grid and the first push-constant words
// (for the GEMMs m, n, k). A diagnostic, not a metric: the timestamps serialise the dispatches they
// separate, so profiled runs are slower than normal ones.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace recon::gpu {

struct DispatchProfileEntry {
  std::string pipeline;
  std::array<uint32_t, 3> groups{};
  std::array<uint32_t, 3> push{};  // the first three 32-bit push-constant words (0 past the end)
  uint64_t count = 0;
  double total_ms = 0;
};

// Initially from RECON_PROFILE_DISPATCHES; graphs recorded while it is on are profiled.
bool dispatch_profiling_enabled();
void set_dispatch_profiling(bool on);

void add_dispatch_time(const std::string& pipeline, const std::array<uint32_t, 3>& groups,
                       const std::array<uint32_t, 3>& push, double ms);

// Entries sorted by total time, largest first.
std::vector<DispatchProfileEntry> dispatch_profile();
void reset_dispatch_profile();

// A table: time per shader (summed over variants and grids), then the `top` largest entries
// (RECON_PROFILE_ROWS=N in the environment: the N largest).
std::string format_dispatch_profile(size_t top);

}  // namespace recon::gpu
