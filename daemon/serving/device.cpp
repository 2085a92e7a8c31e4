// Device: see device.h.
#include "daemon/serving/device.h"

#include <algorithm>

#include "daemon/serving/match/match_instance.h"
#include "daemon/serving/model_kind.h"

namespace recon::daemon {

Device::Device(size_t index, gpu::Runtime& runtime)
    : index_(index), runtime_(runtime), matcher_(std::make_unique<MatchInstance>(runtime)) {}

Device::~Device() = default;

Status Device::begin_loading(const ModelInfo& info) {
  std::lock_guard lock(mutex_);
  auto it = catalog_.find(info.name);
  if (it != catalog_.end() && it->second.state != ModelState::kFailed) {
    return invalid_argument("model '" + info.name + "' is already loaded; unload it first");
  }
  catalog_[info.name] = info;
  return Status::ok();
}

namespace {

// The kind's row of `spec`, refusing what it cannot load.
Result<const ModelKind*> loadable_kind(const ModelSpec& spec) {
  const ModelKind* kind = find_model_kind(spec.kind);
  if (kind == nullptr || kind->load == nullptr) {
    return invalid_argument("model kind '" + spec.kind + "' cannot be loaded (kinds: " + loadable_model_kinds() + ")");
  }
  if ((spec.batching || spec.max_batch_size > 0) && !kind->dynamic_batching) {
    return invalid_argument("model '" + spec.name + "': " + spec.kind +
                            " models take no max_batch_size in their config (recond's --max-batch batches pairs)");
  }
  return kind;
}

// The catalog entry of `spec` before its kind's loader fills in what the file says.
ModelInfo info_of(const ModelSpec& spec) {
  ModelInfo info;
  info.name = spec.name;
  info.kind = spec.kind;
  info.path = spec.path;
  info.version = spec.version;
  info.backbone = spec.backbone;
  info.precision = spec.precision.value_or(gpu::Precision::kF32);
  return info;
}

// Enters a size the model was warmed at in its warmed resolutions, once.
void add_resolution(ModelInfo& info, ImageSize size) {
  if (std::find(info.resolutions.begin(), info.resolutions.end(), size) == info.resolutions.end()) {
    info.resolutions.push_back(size);
  }
}

}  // namespace

Status Device::load(const ModelSpec& spec) {
  RECON_ASSIGN_OR_RETURN(const ModelKind* kind, loadable_kind(spec));
  ModelInfo info = info_of(spec);
  RECON_RETURN_IF_ERROR(begin_loading(info));
  auto instance = kind->load(spec, *this, info);
  std::lock_guard lock(mutex_);
  if (!instance.is_ok()) {
    ModelInfo& entry = catalog_[spec.name];
    entry.state = ModelState::kFailed;
    entry.error = instance.status().to_string();
    return instance.status().with_context("loading " + spec.kind + " model '" + spec.name + "' from " + spec.path);
  }
  info.state = ModelState::kWarming;
  catalog_[spec.name] = std::move(info);
  instances_[spec.name] = std::move(instance).value();
  return Status::ok();
}

Status Device::warm(const std::string& name, ImageSize size, uint32_t batch) {
  auto it = instances_.find(name);
  if (it == instances_.end()) return not_found("model '" + name + "' is not loaded");
  RECON_RETURN_IF_ERROR(it->second->warm(size, batch).with_context("model '" + name + "'"));
  std::lock_guard lock(mutex_);
  add_resolution(catalog_[name], size);
  return Status::ok();
}

Status Device::reload(const ModelSpec& spec, const std::vector<std::pair<ImageSize, uint32_t>>& warm) {
  RECON_ASSIGN_OR_RETURN(const ModelKind* kind, loadable_kind(spec));
  const std::optional<ModelInfo> old = model(spec.name);
  auto it = instances_.find(spec.name);
  if (!old || it == instances_.end()) return not_found("model '" + spec.name + "' is not loaded");
  if (old->state != ModelState::kReady) {
    return unavailable("model '" + spec.name + "' is " + model_state_name(old->state) + ", not ready to reload");
  }
  if (old->kind != spec.kind) {
    return invalid_argument("model '" + spec.name + "' is a " + old->kind + " model; reloading it as " + spec.kind +
                            " needs an unload first");
  }
  ModelInfo info = info_of(spec);
  auto loaded = kind->load(spec, *this, info);
  if (!loaded.is_ok()) {
    return loaded.status().with_context("reloading " + spec.kind + " model '" + spec.name + "' from " + spec.path +
                                        " (the loaded one keeps serving)");
  }
  std::unique_ptr<ModelInstance> instance = std::move(loaded).value();
  for (const auto& [size, batch] : warm) {
    RECON_RETURN_IF_ERROR(
        instance->warm(size, batch)
            .with_context("warming the reload of model '" + spec.name + "' (the loaded one keeps serving)"));
    add_resolution(info, size);
  }
  info.state = ModelState::kReady;
  std::swap(it->second, instance);  // the old instance goes when `instance` does, after the catalog
  std::lock_guard lock(mutex_);
  catalog_[spec.name] = std::move(info);
  return Status::ok();
}

void Device::set_state(const std::string& name, ModelState state, const std::string& error) {
  std::lock_guard lock(mutex_);
  auto it = catalog_.find(name);
  if (it == catalog_.end()) return;
  it->second.state = state;
  it->second.error = error;
}

Status Device::unload(const std::string& name) {
  // Weights return to the pool; results made by the model keep their own tensors.
  const bool had_instance = instances_.erase(name) != 0;
  std::lock_guard lock(mutex_);
  // A failed load leaves only a catalog entry.
  if (catalog_.erase(name) == 0 && !had_instance) return not_found("model '" + name + "' is not loaded");
  return Status::ok();
}

std::optional<ModelInfo> Device::model(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = catalog_.find(name);
  if (it == catalog_.end()) return std::nullopt;
  return it->second;
}

void Device::mark_lost(const Status& why) {
  std::lock_guard lock(mutex_);
  if (lost_.load()) return;
  lost_why_ = why;
  lost_.store(true, std::memory_order_release);
}

Status Device::lost_status() const {
  std::lock_guard lock(mutex_);
  return lost_why_;
}

bool Device::model_ready(const std::string& name) const {
  if (lost()) return false;
  std::lock_guard lock(mutex_);
  auto it = catalog_.find(name);
  return it != catalog_.end() && it->second.state == ModelState::kReady;
}

Status Device::missing(const std::string& name) const {
  if (lost()) return lost_status();
  const auto info = model(name);
  return info ? unavailable("model '" + name + "' is " + model_state_name(info->state))
              : not_found("model '" + name + "' is not loaded");
}

std::vector<ModelInfo> Device::models() const {
  std::lock_guard lock(mutex_);
  std::vector<ModelInfo> out;
  for (const auto& [_, info] : catalog_) out.push_back(info);
  return out;
}

uint64_t Device::weight_bytes() const {
  std::lock_guard lock(mutex_);
  uint64_t total = 0;
  for (const auto& [_, info] : catalog_) total += info.weight_bytes;
  return total;
}

}  // namespace recon::daemon
