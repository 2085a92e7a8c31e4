#include "gpu/models/mast3r/mast3r_weights.h"

#include <algorithm>
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

// [rows, cols] → [cols, rows], in blocks that stay in cache.
void transpose(const uint16_t* in, int64_t rows, int64_t cols, uint16_t* out) {
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
void taps_first(const uint16_t* in, int64_t cout, int64_t cin, int64_t taps, uint16_t* out) {
  for (int64_t o = 0; o < cout; ++o) transpose(in + o * cin * taps, cin, taps, out + o * cin * taps);
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

  // Linear weights in fp16 go up transposed where the tensor-core GEMM runs them (ops::WeightLayout).
  const bool transpose_linear = ops::coopmat_gemm_available(rt.caps());
  std::vector<float> f32;
  std::vector<uint16_t> f16, f16_t;
  const uint64_t range = rt.caps().max_storage_buffer_range;
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
      if (transpose_linear && spec.kind == WeightKind::kLinear && f16.size() * 2 <= range) {
        f16_t.resize(f16.size());
        transpose(f16.data(), shape[0], shape[1], f16_t.data());
        t = Tensor::from_host(rt, DType::kF16, {shape[1], shape[0]}, f16_t.data(), f16_t.size() * 2,
                              MemoryRole::kWeights);
        w->in_out_.insert(spec.name);
      } else if (spec.kind == WeightKind::kConv &&
                 ops::conv2d_preferred_layout(rt.caps(), shape) == ops::ConvWeightLayout::kOHWI) {
        f16_t.resize(f16.size());
        taps_first(f16.data(), shape[0], shape[1], shape[2] * shape[3], f16_t.data());
        t = Tensor::from_host(rt, DType::kF16, {shape[0], shape[2], shape[3], shape[1]}, f16_t.data(), f16_t.size() * 2,
                              MemoryRole::kWeights);
        w->ohwi_.insert(spec.name);
      } else {
        t = Tensor::from_host(rt, DType::kF16, shape, f16.data(), f16.size() * 2, MemoryRole::kWeights);
      }
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

ConvWeight Mast3rWeights::conv(std::string_view name) const {
  const bool ohwi = ohwi_.count(std::string(name)) > 0;
  return {at(name), ohwi ? ops::ConvWeightLayout::kOHWI : ops::ConvWeightLayout::kOIHW};
}

LinearWeight Mast3rWeights::linear(std::string_view name) const {
  const bool in_out = in_out_.count(std::string(name)) > 0;
  return {at(name), in_out ? ops::WeightLayout::kInOut : ops::WeightLayout::kOutIn};
}

}  // namespace recon::gpu
