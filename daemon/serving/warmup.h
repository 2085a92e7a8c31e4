// Loading and warming models on a device, with progress for systemd: a STATUS= line and an
// EXTEND_TIMEOUT_USEC= before every step that may take long (loading weights, building the
// pipelines and graph of one shape), so that a slow but progressing start is never killed and a
// wedged one still is. Runs on the device's worker thread (it calls the engines).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/service/notify.h"
#include "daemon/serving/device.h"
#include "daemon/serving/server_options.h"
#include "gpu/status.h"

namespace recon::daemon {

struct WarmupPlan {
  std::vector<ImageSize> resolutions;    // view 1 = view 2 = each of these
  std::vector<uint32_t> batch_sizes{1};  // scheduler.h warm_batch_sizes()
  std::chrono::seconds step_timeout{300};
};

// Warms `name` at every (resolution, batch size) of the plan. With `set_states` the model is
// kWarming meanwhile and kReady (or kFailed) afterwards — for models being loaded; a Warmup
// request on a ready model leaves it ready. A notifier may be null (no progress reports).
Status warm_model(Device& device, const std::string& name, const WarmupPlan& plan, const Notifier* notifier,
                  bool set_states = true);

// Start-up of one device: loads every configured model, warms it, marks it ready, then saves the
// pipeline cache (when asked). Returns the summary for READY's STATUS= line, e.g.
// "mast3r at 512x384, 512x288 (batch 1, 2, 4)". Stops at the first failure.
Result<std::string> start_device(Device& device, const ServerOptions& options, const WarmupPlan& plan,
                                 const Notifier* notifier);

}  // namespace recon::daemon
