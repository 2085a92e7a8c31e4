// Element types a safetensors file may declare, with their names and sizes.
// Only F32, F16 and BF16 convert to the runtime's float formats; the others are readable as bytes.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace recon::gpu {

enum class Dtype {
  kBool,
  kU8,
  kI8,
  kF8E4M3,
  kF8E5M2,
  kU16,
  kI16,
  kF16,
  kBF16,
  kU32,
  kI32,
  kF32,
  kU64,
  kI64,
  kF64,
};

// The safetensors spelling: "F32", "BF16", "F8_E4M3", ...
const char* dtype_name(Dtype dtype);
std::optional<Dtype> parse_dtype(std::string_view name);
std::size_t dtype_size(Dtype dtype);
// True for F32, F16 and BF16: the sources copy_as_f32 / copy_as_f16 accept.
bool is_float_convertible(Dtype dtype);

}  // namespace recon::gpu
