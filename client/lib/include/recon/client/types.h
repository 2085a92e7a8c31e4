// Plain value types of librecon's public API: element types, resolutions, tensor descriptions
// and request timings. They mirror tables of the wire protocol (schema/common.fbs) without
// exposing FlatBuffers to users of the library.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "recon/client/export.h"

namespace recon::client {

// Same numbers as recon.wire.DType.
enum class DType : uint8_t { kF32 = 0, kF16 = 1, kBF16 = 2, kU8 = 3, kI32 = 4, kU32 = 5, kI64 = 6 };
// Bytes per element (0 for a value outside the enum).
RECON_CLIENT_API size_t dtype_size(DType dtype);
// "f32", "f16", "bf16", "u8", "i32", "u32", "i64".
RECON_CLIENT_API const char* dtype_name(DType dtype);

// Same numbers as recon.wire.Precision. kDefault: the model's configured precision.
// kFp16 keeps the model's heads in fp32; kFp16Heads runs them in fp16 too. kFp32Split: fp32 with the
// GEMMs and convolutions on tensor cores as two fp16 parts per operand (an ONNX model's opt-in;
// MASt3R's kFp32 already runs this way).
enum class Precision : uint8_t { kDefault = 0, kFp32 = 1, kFp16 = 2, kBf16 = 3, kFp16Heads = 4, kFp32Split = 5 };
// "default", "fp32", "fp16", "bf16", "fp16-heads", "fp32-split"
RECON_CLIENT_API const char* precision_name(Precision precision);

// A model input size in pixels.
struct Resolution {
  uint32_t height = 0;
  uint32_t width = 0;
  bool operator==(const Resolution&) const = default;
};
// "512x384" (width x height, as recond.conf and reconctl write it).
RECON_CLIENT_API std::string to_string(const Resolution& resolution);

// Two indices into a batch's image list: `first` is view 1, `second` view 2.
struct ImagePair {
  uint32_t first = 0;
  uint32_t second = 0;
  bool operator==(const ImagePair&) const = default;
};

// One tensor a result handle holds on the daemon.
struct RECON_CLIENT_API TensorInfo {
  std::string name;             // "pts3d_1", "conf_2", "desc_1", ...
  std::vector<uint64_t> shape;  // row-major, outermost first, e.g. {H, W, 3}
  DType dtype = DType::kF32;
  uint64_t byte_size = 0;  // product(shape) * dtype_size(dtype)
  uint64_t elements() const;
};

// Where the time of one request went, as the daemon measured it (zero = not measured).
struct Timings {
  std::chrono::nanoseconds queue{0};    // received → picked by the scheduler
  std::chrono::nanoseconds input{0};    // upload or import and preprocessing
  std::chrono::nanoseconds compute{0};  // the model graph on the GPU
  std::chrono::nanoseconds output{0};   // outputs and answer
  std::chrono::nanoseconds total{0};    // received → answer sent
  uint32_t batch_size = 0;              // pairs that shared the GPU batch
};

}  // namespace recon::client
