// Server: the management requests (manager socket only, access already checked): Warmup,
// LoadModel, UnloadModel. They are validated here, on the I/O thread, and run as control jobs on
// every device's worker, ahead of queued inferences; the device that finishes last answers.
#include <chrono>
#include <memory>
#include <mutex>

#include "daemon/server/responses.h"
#include "daemon/server/server.h"
#include "daemon/service/config_values.h"
#include "daemon/serving/model_kind.h"

namespace recon::daemon {
namespace {

Result<std::vector<ImageSize>> resolutions_from_wire(const flatbuffers::Vector<const wire::Resolution*>* list) {
  std::vector<ImageSize> out;
  if (list == nullptr) return out;
  for (const wire::Resolution* r : *list) {
    if (r->height() == 0 || r->width() == 0 || r->height() % kResolutionMultiple != 0 ||
        r->width() % kResolutionMultiple != 0 || r->height() > kMaxResolutionSide || r->width() > kMaxResolutionSide) {
      return invalid_argument("resolution " + std::to_string(r->width()) + "x" + std::to_string(r->height()) +
                              " must have sides that are non-zero multiples of 16 up to 4096");
    }
    out.push_back({r->height(), r->width()});
  }
  return out;
}

// A management request's context: no result handles (no TTL), no deadline.
RequestContext management_context(const ReplyTarget& target) {
  RequestContext context;
  context.reply = target;
  context.received = SteadyClock::now();
  return context;
}

uint32_t elapsed_ms(std::chrono::steady_clock::time_point start) {
  return static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

WarmupPlan Server::plan_for(const std::vector<ImageSize>& resolutions) const {
  WarmupPlan plan;
  if (resolutions.empty()) {
    for (const ServerOptions::Resolution& r : options_.warmup) plan.resolutions.push_back({r.height, r.width});
  } else {
    plan.resolutions = resolutions;
  }
  plan.batch_sizes = warm_batch_sizes(std::max<uint32_t>(1, options_.batching.max_batch));
  plan.step_timeout = options_.startup_step_timeout;
  return plan;
}

Device& Server::catalog_device() const {
  for (const auto& device : devices_) {
    if (!device->lost()) return *device;
  }
  return *devices_.front();
}

Status Server::submit_on_every_device(const ReplyTarget& target, const std::string& what,
                                      std::function<Result<std::vector<uint8_t>>(Device&)> part) {
  // What the parts share: how many are still running and the first failure. The last one to
  // finish answers for all: that failure, or its own answer (every device gives the same one).
  struct Parts {
    std::mutex mutex;
    size_t remaining = 0;
    Status failure = Status::ok();
  };
  // A lost device is out of rotation for good: the others are all there is.
  std::vector<Device*> serving;
  for (const auto& device : devices_) {
    if (!device->lost()) serving.push_back(device.get());
  }
  if (serving.empty()) return devices_.front()->lost_status();
  auto parts = std::make_shared<Parts>();
  parts->remaining = serving.size();
  for (Device* device : serving) {
    ControlWork job;
    job.context = management_context(target);
    job.what = devices_.size() == 1 ? what : what + " on device " + std::to_string(device->index());
    job.run = [parts, part, several = devices_.size() > 1](Device& d) -> Result<std::optional<std::vector<uint8_t>>> {
      Result<std::vector<uint8_t>> answer = part(d);
      std::lock_guard lock(parts->mutex);
      if (!answer.is_ok() && parts->failure.is_ok()) {
        parts->failure =
            several ? answer.status().with_context("device " + std::to_string(d.index())) : answer.status();
      }
      if (--parts->remaining > 0) return std::optional<std::vector<uint8_t>>();
      if (!parts->failure.is_ok()) return parts->failure;
      return std::optional<std::vector<uint8_t>>(std::move(answer).value());
    };
    RECON_RETURN_IF_ERROR(scheduler_->submit(std::move(job), device->index()));
  }
  return Status::ok();
}

Result<std::optional<std::vector<uint8_t>>> Server::on_warmup(const wire::Warmup& body, const ReplyTarget& target) {
  std::vector<std::string> names;
  if (body.models() != nullptr && body.models()->size() > 0) {
    for (const flatbuffers::String* name : *body.models()) {
      RECON_ASSIGN_OR_RETURN(const ModelInfo info, ready_model(name->str()));
      if (model_kind_warms(info.kind)) names.push_back(name->str());  // a retrieval head has no graph
    }
  } else {
    for (const ModelInfo& m : catalog_device().models()) {
      if (m.state == ModelState::kReady && model_kind_warms(m.kind)) names.push_back(m.name);
    }
  }
  RECON_ASSIGN_OR_RETURN(const std::vector<ImageSize> resolutions, resolutions_from_wire(body.resolutions()));
  const WarmupPlan plan = plan_for(resolutions);
  auto warm = [names, plan, request_id = target.request_id](Device& device) -> Result<std::vector<uint8_t>> {
    const auto start = std::chrono::steady_clock::now();
    std::vector<ModelInfo> models;
    for (const std::string& name : names) {
      RECON_RETURN_IF_ERROR(warm_model(device, name, plan, nullptr, /*set_states=*/false));
      if (auto info = device.model(name)) models.push_back(*info);
    }
    return warmup_response(request_id, models, elapsed_ms(start));
  };
  RECON_RETURN_IF_ERROR(submit_on_every_device(target, "Warmup", std::move(warm)));
  return std::optional<std::vector<uint8_t>>();
}

Result<std::optional<std::vector<uint8_t>>> Server::on_load_model(const wire::LoadModel& body,
                                                                  const ReplyTarget& target) {
  const std::string name = body.name() ? body.name()->str() : std::string();
  RECON_RETURN_IF_ERROR(check_model_name(name).with_context("LoadModel.name"));
  const std::string weights = body.weights() ? body.weights()->str() : std::string();
  auto found = repository_.find(weights, name, body.version());
  if (!found.is_ok()) return found.status().with_context("LoadModel.weights");
  ModelSpec spec = std::move(found).value();
  if (body.kind() != nullptr && body.kind()->size() > 0) spec.kind = body.kind()->str();
  if (body.backbone() != nullptr && body.backbone()->size() > 0) spec.backbone = body.backbone()->str();
  const ModelKind* kind = find_model_kind(spec.kind);
  if (kind == nullptr || kind->load == nullptr) {
    return unimplemented("model kind '" + spec.kind +
                         "' is not supported by this daemon (kinds: " + loadable_model_kinds() + ")");
  }
  // A ready model of this name is reloaded in place (Device::reload); one on its way in or out
  // is busy.
  const std::optional<ModelInfo> existing = catalog_device().model(name);
  const bool reload = existing && existing->state == ModelState::kReady;
  if (existing && !reload && existing->state != ModelState::kFailed) {
    return unavailable("model '" + name + "' is " + model_state_name(existing->state) + "; try again when it is ready");
  }
  switch (body.precision()) {
    case wire::Precision::DEFAULT:
      if (!spec.precision) spec.precision = options_.precision;
      break;
    case wire::Precision::FP32:
      spec.precision = gpu::Precision::kF32;
      break;
    case wire::Precision::FP32_SPLIT:
      spec.precision = gpu::Precision::kF32Split;
      break;
    case wire::Precision::FP16:
      spec.precision = gpu::Precision::kF16;
      break;
    case wire::Precision::FP16_HEADS:
      spec.precision = gpu::Precision::kF16Heads;
      break;
    default:
      return unimplemented("precision " + std::string(wire::EnumNamePrecision(body.precision())) + " is not supported");
  }
  RECON_ASSIGN_OR_RETURN(const std::vector<ImageSize> resolutions, resolutions_from_wire(body.resolutions()));
  const WarmupPlan plan = plan_for(resolutions);
  auto load = [name, spec, plan, reload, warm = body.warm(),
               request_id = target.request_id](Device& device) -> Result<std::vector<uint8_t>> {
    const auto start = std::chrono::steady_clock::now();
    if (reload) {
      std::vector<std::pair<ImageSize, uint32_t>> steps;
      if (warm && model_kind_warms(spec.kind)) {
        for (const ImageSize& size : plan.resolutions) {
          for (uint32_t batch : plan.batch_sizes) steps.emplace_back(size, batch);
        }
      }
      RECON_RETURN_IF_ERROR(device.reload(spec, steps));
    } else {
      RECON_RETURN_IF_ERROR(device.load(spec));
      if (warm) {
        RECON_RETURN_IF_ERROR(warm_model(device, name, plan, nullptr));
      } else {
        device.set_state(name, ModelState::kReady);
      }
    }
    auto info = device.model(name);
    if (!info) return internal_error("model '" + name + "' vanished while loading");
    return load_model_response(request_id, *info, elapsed_ms(start));
  };
  RECON_RETURN_IF_ERROR(submit_on_every_device(target, "LoadModel " + name, std::move(load)));
  return std::optional<std::vector<uint8_t>>();
}

Result<std::optional<std::vector<uint8_t>>> Server::on_unload_model(const wire::UnloadModel& body,
                                                                    const ReplyTarget& target) {
  const std::string name = body.name() ? body.name()->str() : std::string();
  if (!catalog_device().model(name)) return not_found("model '" + name + "' is not loaded");
  // New requests for it are refused from now on; the one running finishes first (the worker
  // runs one thing at a time), queued ones are answered UNAVAILABLE by the worker.
  for (const auto& device : devices_) {
    if (device->model(name)) device->set_state(name, ModelState::kUnloading);
  }
  auto unload = [name, request_id = target.request_id](Device& device) -> Result<std::vector<uint8_t>> {
    RECON_RETURN_IF_ERROR(device.unload(name));
    return unload_model_response(request_id);
  };
  RECON_RETURN_IF_ERROR(submit_on_every_device(target, "UnloadModel " + name, std::move(unload)));
  return std::optional<std::vector<uint8_t>>();
}

}  // namespace recon::daemon
