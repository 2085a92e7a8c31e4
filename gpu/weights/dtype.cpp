// Names and sizes of safetensors element types (see dtype.h).
#include "gpu/weights/dtype.h"

#include <array>

namespace recon::gpu {

namespace {
struct DtypeRow {
  Dtype dtype;
  const char* name;
  std::size_t size;
};
constexpr std::array<DtypeRow, 15> kDtypes = {{
    {Dtype::kBool, "BOOL", 1},
    {Dtype::kU8, "U8", 1},
    {Dtype::kI8, "I8", 1},
    {Dtype::kF8E4M3, "F8_E4M3", 1},
    {Dtype::kF8E5M2, "F8_E5M2", 1},
    {Dtype::kU16, "U16", 2},
    {Dtype::kI16, "I16", 2},
    {Dtype::kF16, "F16", 2},
    {Dtype::kBF16, "BF16", 2},
    {Dtype::kU32, "U32", 4},
    {Dtype::kI32, "I32", 4},
    {Dtype::kF32, "F32", 4},
    {Dtype::kU64, "U64", 8},
    {Dtype::kI64, "I64", 8},
    {Dtype::kF64, "F64", 8},
}};

const DtypeRow& row(Dtype dtype) {
  for (const DtypeRow& r : kDtypes) {
    if (r.dtype == dtype) return r;
  }
  return kDtypes[0];  // unreachable: every enumerator has a row
}
}  // namespace

const char* dtype_name(Dtype dtype) {
  return row(dtype).name;
}

std::size_t dtype_size(Dtype dtype) {
  return row(dtype).size;
}

std::optional<Dtype> parse_dtype(std::string_view name) {
  for (const DtypeRow& r : kDtypes) {
    if (name == r.name) return r.dtype;
  }
  return std::nullopt;
}

bool is_float_convertible(Dtype dtype) {
  return dtype == Dtype::kF32 || dtype == Dtype::kF16 || dtype == Dtype::kBF16;
}

}  // namespace recon::gpu
