// Runs independent tasks on every core: reconctl's file writing and image loading.
#pragma once

#include <functional>
#include <vector>

#include "gpu/status.h"

namespace reconctl {

// Runs every task, on as many threads as the machine has cores (or tasks); one status per task,
// in the tasks' order.
std::vector<recon::Status> run_on_every_core(const std::vector<std::function<recon::Status()>>& tasks);

}  // namespace reconctl
