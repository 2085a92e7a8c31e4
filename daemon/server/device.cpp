// Device: see device.h.
#include "daemon/server/device.h"

#include <algorithm>

namespace recon::daemon {

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
  auto engine = gpu::Mast3rEngine::load(runtime_, path, precision);
  std::lock_guard lock(mutex_);
  ModelInfo& info = catalog_[name];
  if (!engine.is_ok()) {
    info.state = ModelState::kFailed;
    info.error = engine.status().to_string();
    return engine.status().with_context("loading model '" + name + "' from " + path);
  }
  const gpu::Mast3rConfig& config = engine.value()->config();
  info.state = ModelState::kWarming;
  info.weight_bytes = engine.value()->weights().device_bytes();
  info.patch_size = static_cast<uint32_t>(config.patch_size);
  info.default_long_side = static_cast<uint32_t>(std::max(config.img_size[0], config.img_size[1]));
  info.desc_dim = static_cast<uint32_t>(config.desc_dim());
  engines_[name] = std::move(engine).value();
  return Status::ok();
}

Status Device::warm(const std::string& name, const gpu::ForwardShape& shape) {
  auto it = engines_.find(name);
  if (it == engines_.end()) return not_found("model '" + name + "' is not loaded");
  RECON_RETURN_IF_ERROR(it->second->warmup(shape).with_context("warming '" + name + "' at " + shape.to_string()));
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
  auto backbone_engine = engines_.find(backbone);
  auto runner = RetrievalRunner::load(runtime_, path);
  if (backbone_engine == engines_.end()) {
    status = invalid_argument("its backbone model '" + backbone + "' is not loaded");
  } else if (!runner.is_ok()) {
    status = runner.status();
  } else if (runner.value()->token_dim() != backbone_engine->second->config().enc_embed_dim) {
    status = invalid_argument("the head takes " + std::to_string(runner.value()->token_dim()) +
                              "-wide tokens; the encoder of '" + backbone + "' gives " +
                              std::to_string(backbone_engine->second->config().enc_embed_dim));
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
  retrievals_[name] = std::move(runner).value();
  return Status::ok();
}

RetrievalRunner* Device::retrieval(const std::string& name) {
  auto it = retrievals_.find(name);
  return it == retrievals_.end() || !engine_ready(name) ? nullptr : it->second.get();
}

Status Device::unload_model(const std::string& name) {
  if (retrievals_.erase(name) != 0) {
    std::lock_guard lock(mutex_);
    catalog_.erase(name);
    return Status::ok();
  }
  auto it = engines_.find(name);
  if (it == engines_.end()) {
    std::lock_guard lock(mutex_);
    if (catalog_.erase(name) != 0) return Status::ok();  // a failed load leaves only a catalog entry
    return not_found("model '" + name + "' is not loaded");
  }
  engines_.erase(it);  // weights return to the pool; results made by it keep their own tensors
  std::lock_guard lock(mutex_);
  catalog_.erase(name);
  return Status::ok();
}

gpu::Mast3rEngine* Device::engine(const std::string& name) {
  auto it = engines_.find(name);
  if (it == engines_.end()) return nullptr;
  std::lock_guard lock(mutex_);
  auto info = catalog_.find(name);
  if (info == catalog_.end() || info->second.state != ModelState::kReady) return nullptr;
  return it->second.get();
}

std::optional<ModelInfo> Device::model(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = catalog_.find(name);
  if (it == catalog_.end()) return std::nullopt;
  return it->second;
}

bool Device::engine_ready(const std::string& name) const {
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
