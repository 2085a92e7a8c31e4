// A quick end-to-end check of a device: runs the runtime's first ops (fill, shader copy, add,
// tiled matmul) on random data and compares each with exact CPU math. recon-info --self-check
// prints it; the daemon can run it before reporting ready.
#pragma once

#include <string>
#include <vector>

#include "gpu/status.h"

namespace recon::gpu {

class Runtime;

struct SelfCheckItem {
  std::string name;
  bool passed = false;
  double max_error = 0;  // against the CPU reference, in the item's own measure
  double tolerance = 0;
  double gpu_ms = 0;   // wall time of the graph's run()
  std::string detail;  // the failure, if any
};

// Runs every check; a failed check is reported in its item, a runtime failure as the Status.
Result<std::vector<SelfCheckItem>> run_self_check(Runtime& rt);

}  // namespace recon::gpu
