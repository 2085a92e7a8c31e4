// Model loading and warm-up: see warmup.h.
#include "daemon/serving/warmup.h"

#include <algorithm>

#include "daemon/serving/image_size.h"
#include "daemon/serving/model_kind.h"
#include "gpu/log.h"

namespace recon::daemon {
namespace {

void progress(const Notifier* notifier, const std::string& text, std::chrono::seconds timeout) {
  log_info(text);
  if (notifier == nullptr) return;
  // Failures to notify are not failures of the start-up: systemd may simply not be listening.
  (void)notifier->extend_timeout(timeout);
  (void)notifier->status(text);
}

std::string join_sizes(const std::vector<ImageSize>& sizes) {
  std::string out;
  for (const ImageSize& s : sizes) out += (out.empty() ? "" : ", ") + s.to_string();
  return out.empty() ? "no resolution" : out;
}

}  // namespace

Status warm_model(Device& device, const std::string& name, const WarmupPlan& plan, const Notifier* notifier,
                  bool set_states) {
  const std::optional<ModelInfo> info = device.model(name);
  if (!info) return not_found("model '" + name + "' is not loaded");
  if (!model_kind_warms(info->kind)) {
    if (set_states) device.set_state(name, ModelState::kReady);
    return Status::ok();
  }
  if (set_states) device.set_state(name, ModelState::kWarming);
  const size_t steps = plan.resolutions.size() * plan.batch_sizes.size();
  size_t step = 0;
  for (const ImageSize& planned : plan.resolutions) {
    // The plan's sizes are the server's (multiples of 16 for MASt3R). A model with another patch
    // size (DUNE-MASt3R: 14) warms the size an image of that size becomes for it instead.
    ImageSize r = planned;
    if (planned.width % info->patch_size != 0 || planned.height % info->patch_size != 0) {
      auto prepared = official_output_size(planned, std::max(planned.width, planned.height),
                                           CropRule{info->patch_size, info->square_ok});
      if (prepared.is_ok()) r = *prepared;
    }
    for (uint32_t batch : plan.batch_sizes) {
      ++step;
      progress(notifier,
               "warming " + name + " " + std::to_string(step) + "/" + std::to_string(steps) + ": " + r.to_string() +
                   " batch " + std::to_string(batch),
               plan.step_timeout);
      Status status = device.warm(name, r, batch);
      if (!status.is_ok()) {
        if (set_states) device.set_state(name, ModelState::kFailed, status.to_string());
        return status;
      }
    }
  }
  if (set_states) device.set_state(name, ModelState::kReady);
  return Status::ok();
}

Result<std::string> start_device(Device& device, const ServerOptions& options, const WarmupPlan& plan,
                                 const Notifier* notifier) {
  std::string summary;
  for (ModelSpec model : options.models) {
    if (!model.precision) model.precision = options.precision;
    const std::string on = model.backbone.empty() ? std::string() : " on " + model.backbone;
    progress(notifier, "loading " + model.name + " from " + model.path + on, plan.step_timeout);
    RECON_RETURN_IF_ERROR(device.load(model));
    RECON_RETURN_IF_ERROR(warm_model(device, model.name, plan, notifier));
    if (model_kind_warms(model.kind)) {
      std::string batches;
      for (uint32_t b : plan.batch_sizes) batches += (batches.empty() ? "" : ", ") + std::to_string(b);
      // The sizes it was warmed at: the plan's, or what they become for a model of another patch size.
      const std::optional<ModelInfo> warmed = device.model(model.name);
      const std::vector<ImageSize>& sizes = warmed ? warmed->resolutions : plan.resolutions;
      summary += (summary.empty() ? "" : "; ") + model.name + " at " + join_sizes(sizes) + " (batch " + batches + ")";
    } else {
      summary += (summary.empty() ? "" : "; ") + model.name + on;
    }
  }
  if (options.save_pipeline_cache) {
    gpu::PipelineCache& cache = device.runtime().pipeline_cache();
    if (!cache.path().empty()) {
      const Status saved = cache.save();
      if (saved.is_ok()) {
        log_info("Saved the pipeline cache to " + cache.path());
      } else {
        log_warning("Could not save the pipeline cache to " + cache.path() + ": " + saved.to_string());
      }
    }
  }
  return summary.empty() ? std::string("no model loaded") : summary;
}

}  // namespace recon::daemon
