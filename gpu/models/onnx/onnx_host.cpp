#include "gpu/models/onnx/onnx_host.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "gpu/models/onnx/onnx_value.h"
#include "gpu/weights/half_float.h"

namespace recon::gpu::onnx {
namespace {

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Element i of `t` as a double (every numeric type; 64-bit integers beyond 2^53 lose bits, which
// host_int64s avoids by reading them directly).
Result<double> element(const HostTensor& t, size_t i) {
  const uint8_t* p = t.bytes.data() + i * elem_type_size(t.type);
  switch (t.type) {
    case ElemType::kFloat:
      return static_cast<double>(load<float>(p));
    case ElemType::kDouble:
      return load<double>(p);
    case ElemType::kFloat16:
      return static_cast<double>(f16_to_f32(load<uint16_t>(p)));
    case ElemType::kBfloat16:
      return static_cast<double>(bf16_to_f32(load<uint16_t>(p)));
    case ElemType::kUint8:
      return static_cast<double>(load<uint8_t>(p));
    case ElemType::kInt8:
      return static_cast<double>(load<int8_t>(p));
    case ElemType::kUint16:
      return static_cast<double>(load<uint16_t>(p));
    case ElemType::kInt16:
      return static_cast<double>(load<int16_t>(p));
    case ElemType::kInt32:
      return static_cast<double>(load<int32_t>(p));
    case ElemType::kInt64:
      return static_cast<double>(load<int64_t>(p));
    case ElemType::kUint32:
      return static_cast<double>(load<uint32_t>(p));
    case ElemType::kUint64:
      return static_cast<double>(load<uint64_t>(p));
    case ElemType::kBool:
      return load<uint8_t>(p) != 0 ? 1.0 : 0.0;
    default:
      return invalid_argument(std::string("tensor '") + t.name + "' of type " + elem_type_name(t.type) +
                              " has no numeric value");
  }
}

template <typename T>
void store(std::vector<uint8_t>& out, size_t i, T v) {
  std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
}

}  // namespace

bool is_floating(ElemType type) {
  return type == ElemType::kFloat || type == ElemType::kFloat16 || type == ElemType::kDouble ||
         type == ElemType::kBfloat16;
}

std::optional<DType> device_dtype(ElemType type, DType float_dtype) {
  switch (type) {
    case ElemType::kFloat:
    case ElemType::kFloat16:
      return float_dtype;
    case ElemType::kInt8:  // the narrow integers fit i32 exactly; ops that can leave their range wrap back
    case ElemType::kUint8:
    case ElemType::kInt16:
    case ElemType::kUint16:
    case ElemType::kInt32:
    case ElemType::kInt64:
    case ElemType::kBool:  // 0 or 1 in a word: the integer ops, comparisons and Where share it
      return DType::kI32;
    default:
      return std::nullopt;
  }
}

int narrow_int_bits(ElemType type) {
  switch (type) {
    case ElemType::kInt8:
    case ElemType::kUint8:
      return 8;
    case ElemType::kInt16:
    case ElemType::kUint16:
      return 16;
    default:
      return 0;
  }
}

Result<std::vector<int64_t>> host_int64s(const HostTensor& t) {
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    if (t.type == ElemType::kInt64) {
      out[i] = load<int64_t>(t.bytes.data() + i * 8);
      continue;
    }
    RECON_ASSIGN_OR_RETURN(double v, element(t, i));
    if (!std::isfinite(v))
      return invalid_argument("tensor '" + t.name + "' holds a non-finite value where integers are expected");
    out[i] = static_cast<int64_t>(v);
  }
  return out;
}

Result<std::vector<double>> host_doubles(const HostTensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    RECON_ASSIGN_OR_RETURN(out[i], element(t, i));
  }
  return out;
}

HostTensor make_int64_tensor(std::vector<int64_t> dims, std::span<const int64_t> values) {
  std::vector<uint8_t> bytes(values.size() * 8);
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return HostTensor::owned(ElemType::kInt64, std::move(dims), std::move(bytes));
}

HostTensor make_float_tensor(std::vector<int64_t> dims, std::span<const float> values, std::string name) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return HostTensor::owned(ElemType::kFloat, std::move(dims), std::move(bytes), std::move(name));
}

Result<HostTensor> make_tensor(ElemType type, std::vector<int64_t> dims, std::span<const double> values) {
  const size_t es = elem_type_size(type);
  if (es == 0) return invalid_argument(std::string("cannot make a tensor of type ") + elem_type_name(type));
  std::vector<uint8_t> out(values.size() * es);
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    switch (type) {
      case ElemType::kFloat:
        store(out, i, static_cast<float>(v));
        break;
      case ElemType::kDouble:
        store(out, i, v);
        break;
      case ElemType::kFloat16:
        store(out, i, f32_to_f16(static_cast<float>(v)));
        break;
      case ElemType::kUint8:
        store(out, i, static_cast<uint8_t>(static_cast<int64_t>(v)));
        break;
      case ElemType::kInt8:
        store(out, i, static_cast<int8_t>(static_cast<int64_t>(v)));
        break;
      case ElemType::kUint16:
        store(out, i, static_cast<uint16_t>(static_cast<int64_t>(v)));
        break;
      case ElemType::kInt16:
        store(out, i, static_cast<int16_t>(static_cast<int64_t>(v)));
        break;
      case ElemType::kInt32:
        store(out, i, static_cast<int32_t>(v));
        break;
      case ElemType::kInt64:
        store(out, i, static_cast<int64_t>(v));
        break;
      case ElemType::kUint32:
        store(out, i, static_cast<uint32_t>(v));
        break;
      case ElemType::kUint64:
        store(out, i, static_cast<uint64_t>(v));
        break;
      case ElemType::kBool:
        store(out, i, static_cast<uint8_t>(v != 0.0));
        break;
      default:
        return invalid_argument(std::string("cannot make a tensor of type ") + elem_type_name(type));
    }
  }
  return HostTensor::owned(type, std::move(dims), std::move(out));
}

Result<std::vector<uint8_t>> to_device_bytes(const HostTensor& t, DType dtype) {
  const size_t n = static_cast<size_t>(t.numel());
  std::vector<uint8_t> out(n * dtype_size(dtype));
  if (dtype == DType::kF32 && t.type == ElemType::kFloat) {
    std::memcpy(out.data(), t.bytes.data(), out.size());
    return out;
  }
  if (dtype == DType::kF16 && t.type == ElemType::kFloat16) {
    std::memcpy(out.data(), t.bytes.data(), out.size());
    return out;
  }
  if (dtype == DType::kF16 && t.type == ElemType::kFloat) {
    f32_bytes_to_f16(reinterpret_cast<const std::byte*>(t.bytes.data()), n, reinterpret_cast<uint16_t*>(out.data()));
    return out;
  }
  for (size_t i = 0; i < n; ++i) {
    RECON_ASSIGN_OR_RETURN(double v, element(t, i));
    switch (dtype) {
      case DType::kF32:
        store(out, i, static_cast<float>(v));
        break;
      case DType::kF16:
        store(out, i, f32_to_f16(static_cast<float>(v)));
        break;
      case DType::kI32:
        if (t.type == ElemType::kInt64) {
          const int64_t w = load<int64_t>(t.bytes.data() + i * 8);
          if (w < std::numeric_limits<int32_t>::min() || w > std::numeric_limits<int32_t>::max()) {
            return invalid_argument("tensor '" + t.name + "': value " + std::to_string(w) +
                                    " does not fit the device's 32-bit integers");
          }
          store(out, i, static_cast<int32_t>(w));
        } else {
          store(out, i, static_cast<int32_t>(v));
        }
        break;
      case DType::kU8:
        store(out, i, static_cast<uint8_t>(v));
        break;
    }
  }
  return out;
}

Result<HostTensor> from_device_bytes(std::span<const uint8_t> bytes, DType dtype, ElemType type,
                                     std::vector<int64_t> dims, std::string name) {
  const size_t n = bytes.size() / dtype_size(dtype);
  if ((dtype == DType::kF32 && type == ElemType::kFloat) || (dtype == DType::kF16 && type == ElemType::kFloat16) ||
      (dtype == DType::kI32 && type == ElemType::kInt32) || (dtype == DType::kU8 && type == ElemType::kUint8)) {
    return HostTensor::owned(type, std::move(dims), std::vector<uint8_t>(bytes.begin(), bytes.end()), std::move(name));
  }
  std::vector<double> values(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = bytes.data() + i * dtype_size(dtype);
    switch (dtype) {
      case DType::kF32:
        values[i] = load<float>(p);
        break;
      case DType::kF16:
        values[i] = f16_to_f32(load<uint16_t>(p));
        break;
      case DType::kI32:
        values[i] = load<int32_t>(p);
        break;
      case DType::kU8:
        values[i] = load<uint8_t>(p);
        break;
    }
  }
  RECON_ASSIGN_OR_RETURN(HostTensor t, make_tensor(type, std::move(dims), values));
  t.name = std::move(name);
  return t;
}

}  // namespace recon::gpu::onnx
