// Device: see device.h.
#include "daemon/server/device.h"

#include <algorithm>

#include "daemon/server/mast3r_instance.h"
#include "daemon/server/match_instance.h"
#include "daemon/server/retrieval_instance.h"

namespace recon::daemon {

Device::Device(size_t index, gpu::Runtime& runtime)
    : index_(index), runtime_(runtime), matcher_(std::make_unique<MatchInstance>(runtime)) {}

Device::~Device() = default;

const char* model_state_name(ModelState state) {
  switch (state) {
    case ModelState::kLoading:
      return "loading";
    case ModelState::kWarming:
      return "warming";
    case ModelState::kReady:
      return "ready";
    case ModelState::kFailed:
      return "failed";
    case ModelState::kUnloading:
      return "unloading";
  }
  return "unknown";
}

Status Device::begin_loading(ModelInfo info) {
  std::lock_guard lock(mutex_);
  auto it = catalog_.find(info.name);
  if (it != catalog_.end() && it->second.state != ModelState::kFailed) {
    return invalid_argument("model '" + info.name + "' is already loaded; unload it first");
  }
  info.state = ModelState::kLoading;
  catalog_[info.name] = std::move(info);
  return Status::ok();
}

Status Device::load_model(const std::string& name, const std::string& path, gpu::Precision precision) {
  ModelInfo entry;
  entry.name = name;
  entry.path = path;
  entry.precision = precision;
  RECON_RETURN_IF_ERROR(begin_loading(std::move(entry)));
  auto instance = Mast3rInstance::load(runtime_, path, precision);
  std::lock_guard lock(mutex_);
  ModelInfo& info = catalog_[name];
  if (!instance.is_ok()) {
    info.state = ModelState::kFailed;
    info.error = instance.status().to_string();
    return instance.status().with_context("loading model '" + name + "' from " + path);
  }
  const gpu::Mast3rConfig& config = instance.value()->engine().config();
  info.state = ModelState::kWarming;
  info.weight_bytes = instance.value()->weight_bytes();
  info.patch_size = static_cast<uint32_t>(config.patch_size);
  info.default_long_side = static_cast<uint32_t>(std::max(config.img_size[0], config.img_size[1]));
  info.desc_dim = static_cast<uint32_t>(config.desc_dim());
  instances_[name] = std::move(instance).value();
  return Status::ok();
}

Status Device::warm(const std::string& name, const gpu::ForwardShape& shape) {
  auto it = instances_.find(name);
  auto* mast3r = it == instances_.end() ? nullptr : dynamic_cast<Mast3rInstance*>(it->second.get());
  if (mast3r == nullptr) return not_found("model '" + name + "' is not loaded");
  RECON_RETURN_IF_ERROR(mast3r->engine().warmup(shape).with_context("warming '" + name + "' at " + shape.to_string()));
  if (shape.view1 == shape.view2) {
    const ImageSize size{static_cast<uint32_t>(shape.view1.height), static_cast<uint32_t>(shape.view1.width)};
    std::lock_guard lock(mutex_);
    auto& resolutions = catalog_[name].resolutions;
    if (std::find(resolutions.begin(), resolutions.end(), size) == resolutions.end()) resolutions.push_back(size);
  }
  return Status::ok();
}

void Device::set_state(const std::string& name, ModelState state, const std::string& error) {
  std::lock_guard lock(mutex_);
  auto it = catalog_.find(name);
  if (it == catalog_.end()) return;
  it->second.state = state;
  it->second.error = error;
}

Status Device::load_retrieval(const std::string& name, const std::string& path, const std::string& backbone) {
  ModelInfo entry;
  entry.name = name;
  entry.kind = "retrieval";
  entry.path = path;
  entry.backbone = backbone;
  RECON_RETURN_IF_ERROR(begin_loading(std::move(entry)));
  Status status;
  auto found = instances_.find(backbone);
  auto* backbone_instance = found == instances_.end() ? nullptr : dynamic_cast<Mast3rInstance*>(found->second.get());
  auto runner = RetrievalInstance::load(runtime_, path);
  if (backbone_instance == nullptr) {
    status = invalid_argument("its backbone model '" + backbone + "' is not loaded");
  } else if (!runner.is_ok()) {
    status = runner.status();
  } else if (runner.value()->token_dim() != backbone_instance->engine().config().enc_embed_dim) {
    status = invalid_argument("the head takes " + std::to_string(runner.value()->token_dim()) +
                              "-wide tokens; the encoder of '" + backbone + "' gives " +
                              std::to_string(backbone_instance->engine().config().enc_embed_dim));
  }
  std::lock_guard lock(mutex_);
  ModelInfo& info = catalog_[name];
  if (!status.is_ok()) {
    info.state = ModelState::kFailed;
    info.error = status.to_string();
    return status.with_context("loading retrieval model '" + name + "' from " + path);
  }
  const ModelInfo& encoder = catalog_[backbone];
  info.state = ModelState::kReady;
  info.precision = encoder.precision;
  info.patch_size = encoder.patch_size;
  info.default_long_side = encoder.default_long_side;
  info.weight_bytes = runner.value()->weight_bytes();
  instances_[name] = std::move(runner).value();
  return Status::ok();
}

Status Device::unload_model(const std::string& name) {
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

bool Device::model_ready(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = catalog_.find(name);
  return it != catalog_.end() && it->second.state == ModelState::kReady;
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
