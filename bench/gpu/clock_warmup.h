// Bringing the GPU's clocks up before a measurement. A GPU left idle while the host prepares a case
// (random operands, uploads, recording) drops its shader clock to idle — 345 MHz on an H200 where
// the boost clock is 1980 (nvidia-smi dmon) — and raises it again only under sustained load, which
// a bench's short timed loop need not give it: memory-bound ops timed straight after such a pause
// ran 1.5–3× slower than the same kernels on a busy GPU (docs/PERFORMANCE_LOG.md, 2026-11-22 13:50–15:07 UTC).
#pragma once

#include <chrono>

#include "gpu/capabilities.h"
#include "gpu/status.h"

namespace recon::bench {

// Seconds of back-to-back work that bring an H200 from idle to its boost clock, with margin.
inline constexpr double kClockWarmupSeconds = 0.3;

// Calls `run` (one submission and the wait for it) until `seconds` of wall time have passed;
// returns the first error. A CPU device (lavapipe) has no clocks to raise: pass 0 there.
template <typename Run>
Status warm_up_clocks(Run&& run, double seconds) {
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    RECON_RETURN_IF_ERROR(run());
  }
  return Status::ok();
}

inline double clock_warmup_seconds(const gpu::Capabilities& caps) {
  return caps.device_type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 0.0 : kClockWarmupSeconds;
}

}  // namespace recon::bench
