#include "gpu/models/mast3r/mast3r_weights.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gpu/log.h"
#include "gpu/weights/half_float.h"
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

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// DUNE's LayerScale multiplies the output of attn.proj (ls1) and mlp.fc2 (ls2) by a per-channel
// gamma. It is folded into those layers' rows and biases here, in fp32 before any fp16 rounding:
// gamma·(W x + b) = (gamma∘W) x + gamma∘b, which moves one rounding of the product into the weight
// (measured by the DUNE goldens, docs/MAST3R.md). The gamma of a weight or bias, or "".
std::string layer_scale_of(const Mast3rConfig& c, const std::string& name) {
  if (!c.is_dune() || !c.dune_layerscale || name.rfind("dune_backbone.blocks.", 0) != 0) return {};
  for (const auto& [layer, gamma] : {std::pair{".attn.proj.", ".ls1.gamma"}, std::pair{".mlp.fc2.", ".ls2.gamma"}}) {
    for (const char* leaf : {"weight", "bias"}) {
      const std::string suffix = std::string(layer) + leaf;
      if (ends_with(name, suffix)) return name.substr(0, name.size() - suffix.size()) + gamma;
    }
  }
  return {};
}

bool is_layer_scale(const std::string& name) {
  return ends_with(name, ".ls1.gamma") || ends_with(name, ".ls2.gamma");
}

// The DUNE tokens and position table: the encoder graph builder combines them on the host (the
// table is resampled per image size), so they stay there.
bool kept_on_host(const std::string& name) {
  return name == "dune_backbone.cls_token" || name == "dune_backbone.pos_embed" ||
         name == "dune_backbone.register_tokens";
}

// [rows, cols] → [cols, rows], in blocks that stay in cache.
template <typename T>
void transpose(const T* in, int64_t rows, int64_t cols, T* out) {
  constexpr int64_t kBlock = 64;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
      for (int64_t r = r0; r < std::min(rows, r0 + kBlock); ++r) {
        for (int64_t c = c0; c < std::min(cols, c0 + kBlock); ++c) out[c * rows + r] = in[r * cols + c];
      }
    }
  }
}

// [Cout, Cin, taps] → [Cout, taps, Cin]: each output channel's [Cin, taps] block transposed.
template <typename T>
void taps_first(const T* in, int64_t cout, int64_t cin, int64_t taps, T* out) {
  for (int64_t o = 0; o < cout; ++o) transpose(in + o * cin * taps, cin, taps, out + o * cin * taps);
}

// Uploads `values` (a tensor of PyTorch's `shape`; uint16_t holds fp16 bits): a linear weight
// transposed to [in, out] (in_out), a convolution's tap by tap to [Cout, KH, KW, Cin] (ohwi), or as
// it is.
template <typename T>
Result<Tensor> upload_arranged(Runtime& rt, const std::vector<T>& values, const Shape& shape, bool in_out, bool ohwi) {
  const DType dtype = sizeof(T) == 2 ? DType::kF16 : DType::kF32;
  const T* data = values.data();
  Shape stored = shape;
  std::vector<T> arranged;
  if (in_out || ohwi) {
    arranged.resize(values.size());
    if (in_out) {
      transpose(values.data(), shape[0], shape[1], arranged.data());
      stored = {shape[1], shape[0]};
    } else {
      taps_first(values.data(), shape[0], shape[1], shape[2] * shape[3], arranged.data());
      stored = {shape[0], shape[2], shape[3], shape[1]};
    }
    data = arranged.data();
  }
  return Tensor::from_host(rt, dtype, stored, data, values.size() * sizeof(T), MemoryRole::kWeights);
}

}  // namespace

Result<std::unique_ptr<Mast3rWeights>> Mast3rWeights::load(Runtime& rt, const std::string& path, Precision precision) {
  RECON_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path));
  std::unique_ptr<Mast3rWeights> w(new Mast3rWeights());
  RECON_ASSIGN_OR_RETURN(w->config_, Mast3rConfig::from_safetensors(file));
  w->precision_ = precision;
  RECON_ASSIGN_OR_RETURN(Mast3rWeightMap map, check_weights(file, w->config_));
  for (const std::string& note : map.notes()) log_info(path + ": " + note);

  // Weights the tensor-core GEMM runs go up in its layouts: linear weights transposed
  // (ops::WeightLayout), convolution weights tap by tap (ops::conv2d_preferred_layout). That is
  // every weight where the device has tensor cores: the fp32 ones run split into fp16 parts
  // (ops::GemmPath).
  const bool coopmat = ops::coopmat_gemm_available(rt.caps());
  std::vector<float> f32;
  std::vector<uint16_t> f16;
  const uint64_t range = rt.caps().max_storage_buffer_range;
  // fp32 values of the named tensor, with its layer scale folded in when it has one.
  auto read_f32 = [&](const WeightSpec& spec, const TensorInfo& info, std::vector<float>& out) -> Status {
    out.resize(info.numel());
    RECON_RETURN_IF_ERROR(file.copy_as_f32(info.name, out.data()));
    const std::string gamma_name = layer_scale_of(w->config_, spec.name);
    if (gamma_name.empty()) return Status::ok();
    const TensorInfo* g = map.find(file, gamma_name);
    if (g == nullptr) return internal_error("layer scale " + gamma_name + " vanished after the check");
    std::vector<float> gamma(g->numel());
    RECON_RETURN_IF_ERROR(file.copy_as_f32(g->name, gamma.data()));
    const size_t row = out.size() / gamma.size();  // a weight's [out, in] rows, or 1 for the bias
    for (size_t o = 0; o < gamma.size(); ++o) {
      for (size_t k = 0; k < row; ++k) out[o * row + k] *= gamma[o];
    }
    return Status::ok();
  };
  for (const WeightSpec& spec : mast3r_weight_catalog(w->config_)) {
    if (!spec.alias_of.empty() || unused_at_inference(spec.name) || is_layer_scale(spec.name)) continue;
    const TensorInfo* info = map.find(file, spec.name);
    if (info == nullptr) return internal_error("weight " + spec.name + " vanished after the check");
    if (kept_on_host(spec.name)) {
      std::vector<float>& host = w->host_[spec.name];
      RECON_RETURN_IF_ERROR(read_f32(spec, *info, host));
      continue;
    }
    const bool half = is_head(spec.name) ? precision == Precision::kF16Heads : !is_fp32(precision);
    const Shape shape(spec.shape.begin(), spec.shape.end());
    if (half) {
      f16.resize(info->numel());
      if (layer_scale_of(w->config_, spec.name).empty()) {
        RECON_RETURN_IF_ERROR(file.copy_as_f16(info->name, f16.data()));
      } else {
        RECON_RETURN_IF_ERROR(read_f32(spec, *info, f32));
        for (size_t i = 0; i < f32.size(); ++i) f16[i] = f32_to_f16(f32[i]);
      }
    } else {
      RECON_RETURN_IF_ERROR(read_f32(spec, *info, f32));
    }
    const DType dtype = half ? DType::kF16 : DType::kF32;
    const size_t bytes = info->numel() * dtype_size(dtype);
    const bool in_out = coopmat && spec.kind == WeightKind::kLinear && bytes <= range;
    const bool ohwi = coopmat && spec.kind == WeightKind::kConv &&
                      ops::conv2d_preferred_layout(rt.caps(), shape) == ops::ConvWeightLayout::kOHWI;
    Result<Tensor> t =
        half ? upload_arranged(rt, f16, shape, in_out, ohwi) : upload_arranged(rt, f32, shape, in_out, ohwi);
    if (in_out) w->in_out_.insert(spec.name);
    if (ohwi) w->ohwi_.insert(spec.name);
    if (!t.is_ok()) return t.status().with_context("uploading weight " + spec.name);
    w->device_bytes_ += t->bytes();
    w->tensors_.emplace(spec.name, std::move(t).value());
  }
  return w;
}

namespace {

// The entry `name` of a weight map; asking for one the load did not make is a bug in the forward's
// construction, so it aborts with the name rather than returning something to check.
template <typename Map>
const typename Map::mapped_type& find_or_abort(const Map& map, std::string_view name, const char* what,
                                               const char* missing) {
  auto it = map.find(std::string(name));
  if (it == map.end()) {
    std::fprintf(stderr, "recon: MASt3R %s %.*s requested but not %s\n", what, static_cast<int>(name.size()),
                 name.data(), missing);
    std::abort();
  }
  return it->second;
}

}  // namespace

const Tensor& Mast3rWeights::at(std::string_view name) const {
  return find_or_abort(tensors_, name, "weight", "loaded");
}

const std::vector<float>& Mast3rWeights::host(std::string_view name) const {
  return find_or_abort(host_, name, "host tensor", "kept");
}

ConvWeight Mast3rWeights::conv(std::string_view name) const {
  const bool ohwi = ohwi_.count(std::string(name)) > 0;
  return {at(name), ohwi ? ops::ConvWeightLayout::kOHWI : ops::ConvWeightLayout::kOIHW, gemm_path(name)};
}

LinearWeight Mast3rWeights::linear(std::string_view name) const {
  const bool in_out = in_out_.count(std::string(name)) > 0;
  return {at(name), in_out ? ops::WeightLayout::kInOut : ops::WeightLayout::kOutIn, gemm_path(name)};
}

ops::GemmPath Mast3rWeights::gemm_path(std::string_view name) const {
  if (at(name).dtype() != DType::kF32) return ops::GemmPath::kAuto;
  // The fp32 heads of kF16 add nothing to its error that rounding each slice would take away.
  return is_fp32(precision_) ? ops::GemmPath::kAutoSplitF32 : ops::GemmPath::kAutoSplitF32Coarse;
}

}  // namespace recon::gpu
