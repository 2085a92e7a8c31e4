// The precisions a model is loaded in: one vocabulary for the engines, recond's configuration and
// model repository, the wire protocol and the tools (no Vulkan dependency).
//   fp32        fp32 storage and arithmetic. MASt3R runs its GEMMs and convolutions on tensor cores
//               as two fp16 parts per operand where the device has them (its value ranges are
//               known to fit fp16's: docs/MAST3R.md); an ONNX model on the scalar path, as its
//               ranges are not known.
//   fp32-split  fp32, with every GEMM and convolution on tensor cores as two fp16 parts per operand
//               (ops::GemmPath::kAutoSplitF32; operands beyond ±65504 give NaN). ONNX models opt in
//               with it; for MASt3R it is its fp32.
//   fp16        fp16 storage, fp32 accumulation; MASt3R keeps its heads in fp32, as the official
//               inference does.
//   fp16-heads  fp16, MASt3R's heads too (not what the official code does; faster); an ONNX model,
//               which has no heads, runs it as fp16.
#pragma once

#include <string_view>

#include "gpu/status.h"

namespace recon::gpu {

enum class Precision { kF32, kF32Split, kF16, kF16Heads };

const char* precision_name(Precision precision);  // "fp32", "fp32-split", "fp16", "fp16-heads"
// The names above (and "f32", "f16"), in any case; anything else is INVALID_ARGUMENT naming the
// choices.
Result<Precision> parse_precision(std::string_view name);
// fp32 storage: kF32 and kF32Split.
inline bool is_fp32(Precision precision) {
  return precision == Precision::kF32 || precision == Precision::kF32Split;
}

}  // namespace recon::gpu
