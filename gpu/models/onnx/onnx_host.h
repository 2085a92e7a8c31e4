// Host tensors as numbers: reading any ONNX element type as int64 or float, making small tensors
// for folded shape arithmetic, and converting between ONNX element types and the bytes a device
// tensor holds (the edges of a compiled graph: weights and inputs up, outputs down).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpu/models/onnx/onnx_model.h"
#include "gpu/status.h"
#include "gpu/tensor.h"

namespace recon::gpu::onnx {

// 8 for int8 and uint8, 16 for int16 and uint16 (held as i32 words on the device), else 0.
int narrow_int_bits(ElemType type);

Result<std::vector<int64_t>> host_int64s(const HostTensor& t);
Result<std::vector<double>> host_doubles(const HostTensor& t);

HostTensor make_int64_tensor(std::vector<int64_t> dims, std::span<const int64_t> values);
// A float tensor holding `values` as they are (fp32).
HostTensor make_float_tensor(std::vector<int64_t> dims, std::span<const float> values, std::string name = {});
// A tensor of `type` (any numeric ONNX type) with `values` converted to it.
Result<HostTensor> make_tensor(ElemType type, std::vector<int64_t> dims, std::span<const double> values);

// The bytes of `t` as a device tensor of `dtype` holds them (floats converted, integers narrowed
// to i32 with a range check).
Result<std::vector<uint8_t>> to_device_bytes(const HostTensor& t, DType dtype);
// The inverse: device bytes of `dtype` as an ONNX tensor of `type`.
Result<HostTensor> from_device_bytes(std::span<const uint8_t> bytes, DType dtype, ElemType type,
                                     std::vector<int64_t> dims, std::string name);

}  // namespace recon::gpu::onnx
