#include "gpu/models/mast3r/mast3r_weights.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gpu/log.h"
#include "gpu/weights/mast3r_weight_catalog.h"
#include "gpu/weights/safetensors.h"

namespace recon::gpu {
namespace {

// Parameters that checkpoints carry but inference never reads.
bool unused_at_inference(const std::string& name) {
  return name == "mask_token" || name.find("refinenet4.resConfUnit1.") != std::string::npos;
}

bool is_head(const std::string& name) {
  return name.rfind("downstream_head", 0) == 0;
}

}  // namespace

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kF32:
      return "fp32";
    case Precision::kF16:
      return "fp16";
    case Precision::kF16Heads:
      return "fp16-heads";
  }
  return "?";
}

Result<Precision> parse_precision(std::string_view name) {
  if (name == "fp32" || name == "f32") return Precision::kF32;
  if (name == "fp16" || name == "f16") return Precision::kF16;
  if (name == "fp16-heads") return Precision::kF16Heads;
  return invalid_argument("unknown precision \"" + std::string(name) + "\" (fp32, fp16 or fp16-heads)");
}

Result<std::unique_ptr<Mast3rWeights>> Mast3rWeights::load(Runtime& rt, const std::string& path, Precision precision) {
  RECON_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path));
  std::unique_ptr<Mast3rWeights> w(new Mast3rWeights());
  RECON_ASSIGN_OR_RETURN(w->config_, Mast3rConfig::from_safetensors(file));
  w->precision_ = precision;
  RECON_ASSIGN_OR_RETURN(Mast3rWeightMap map, check_weights(file, w->config_));
  for (const std::string& note : map.notes()) log_info(path + ": " + note);

  std::vector<float> f32;
  std::vector<uint16_t> f16;
  for (const WeightSpec& spec : mast3r_weight_catalog(w->config_)) {
    if (!spec.alias_of.empty() || unused_at_inference(spec.name)) continue;
    const TensorInfo* info = map.find(file, spec.name);
    if (info == nullptr) return internal_error("weight " + spec.name + " vanished after the check");
    const bool half = is_head(spec.name) ? precision == Precision::kF16Heads : precision != Precision::kF32;
    Shape shape(spec.shape.begin(), spec.shape.end());
    Result<Tensor> t = invalid_argument("unreachable");
    if (half) {
      f16.resize(info->numel());
      RECON_RETURN_IF_ERROR(file.copy_as_f16(info->name, f16.data()));
      t = Tensor::from_host(rt, DType::kF16, shape, f16.data(), f16.size() * 2, MemoryRole::kWeights);
    } else {
      f32.resize(info->numel());
      RECON_RETURN_IF_ERROR(file.copy_as_f32(info->name, f32.data()));
      t = Tensor::from_host(rt, DType::kF32, shape, f32.data(), f32.size() * 4, MemoryRole::kWeights);
    }
    if (!t.is_ok()) return t.status().with_context("uploading weight " + spec.name);
    w->device_bytes_ += t->bytes();
    w->tensors_.emplace(spec.name, std::move(t).value());
  }
  return w;
}

const Tensor& Mast3rWeights::at(std::string_view name) const {
  auto it = tensors_.find(std::string(name));
  if (it == tensors_.end()) {
    std::fprintf(stderr, "recon: MASt3R weight %.*s requested but not loaded\n", static_cast<int>(name.size()),
                 name.data());
    std::abort();
  }
  return it->second;
}

}  // namespace recon::gpu
