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

// Uploads `values` (a tensor of PyTorch's `shape`; uint16_t holds fp16 bits) as `stored`: a linear
// weight transposed to [in, out] (in_out), a convolution's tap by tap (ohwi), or as it is.
template <typename T>
Result<Tensor> upload_arranged(Runtime& rt, const std::vector<T>& values, const Shape& shape, bool in_out, bool ohwi,
                               const Shape& stored) {
  const DType dtype = sizeof(T) == 2 ? DType::kF16 : DType::kF32;
  const T* data = values.data();
  std::vector<T> arranged;
  if (in_out || ohwi) {
    arranged.resize(values.size());
    if (in_out) transpose(values.data(), shape[0], shape[1], arranged.data());
    if (ohwi) taps_first(values.data(), shape[0], shape[1], shape[2] * shape[3], arranged.data());
    data = arranged.data();
  }
  return Tensor::from_host(rt, dtype, stored, data, values.size() * sizeof(T), MemoryRole::kWeights);
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

  // Weights the tensor-core GEMM runs go up in its layouts: linear weights transposed
  // (ops::WeightLayout), convolution weights tap by tap (ops::conv2d_preferred_layout). Those are
  // the fp16 ones and, in kF16, the fp32 heads (split into fp16 parts: ops::GemmPath).
  const bool coopmat = ops::coopmat_gemm_available(rt.caps());
  std::vector<float> f32;
  std::vector<uint16_t> f16;
  const uint64_t range = rt.caps().max_storage_buffer_range;
  for (const WeightSpec& spec : mast3r_weight_catalog(w->config_)) {
    if (!spec.alias_of.empty() || unused_at_inference(spec.name)) continue;
    const TensorInfo* info = map.find(file, spec.name);
    if (info == nullptr) return internal_error("weight " + spec.name + " vanished after the check");
    const bool half = is_head(spec.name) ? precision == Precision::kF16Heads : precision != Precision::kF32;
    const Shape shape(spec.shape.begin(), spec.shape.end());
    if (half) {
      f16.resize(info->numel());
      RECON_RETURN_IF_ERROR(file.copy_as_f16(info->name, f16.data()));
    } else {
      f32.resize(info->numel());
      RECON_RETURN_IF_ERROR(file.copy_as_f32(info->name, f32.data()));
    }
    const DType dtype = half ? DType::kF16 : DType::kF32;
    const size_t bytes = info->numel() * dtype_size(dtype);
    const bool split = !half && precision == Precision::kF16 && is_head(spec.name);
    const bool tensor_cores = coopmat && (half || split);
    const bool in_out = tensor_cores && spec.kind == WeightKind::kLinear && bytes <= range;
    const bool ohwi = tensor_cores && spec.kind == WeightKind::kConv &&
                      ops::conv2d_preferred_layout(rt.caps(), shape) == ops::ConvWeightLayout::kOHWI;
    Shape stored = shape;
    if (in_out) stored = {shape[1], shape[0]};
    if (ohwi) stored = {shape[0], shape[2], shape[3], shape[1]};
    Result<Tensor> t = half ? upload_arranged(rt, f16, shape, in_out, ohwi, stored)
                            : upload_arranged(rt, f32, shape, in_out, ohwi, stored);
    if (in_out) w->in_out_.insert(spec.name);
    if (ohwi) w->ohwi_.insert(spec.name);
    if (split) w->split_.insert(spec.name);
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
  return {at(name), ohwi ? ops::ConvWeightLayout::kOHWI : ops::ConvWeightLayout::kOIHW, gemm_path(name)};
}

LinearWeight Mast3rWeights::linear(std::string_view name) const {
  const bool in_out = in_out_.count(std::string(name)) > 0;
  return {at(name), in_out ? ops::WeightLayout::kInOut : ops::WeightLayout::kOutIn, gemm_path(name)};
}

ops::GemmPath Mast3rWeights::gemm_path(std::string_view name) const {
  return split_.count(std::string(name)) > 0 ? ops::GemmPath::kAutoSplitF32 : ops::GemmPath::kAuto;
}

}  // namespace recon::gpu
