// Reading ONNX files (ModelProto, and the serialized TensorProto files of ONNX's test data) into the
// plain structs of onnx_model.h. The file is memory-mapped; tensors point into the mapping, which
// their `owner` keeps alive. Untrusted input: every length, count and offset is checked, and the
// reader refuses what it cannot represent (sparse or segmented tensors, string tensors) instead of
// guessing. It decides nothing about which ops can run; the compiler does.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "gpu/models/onnx/onnx_model.h"
#include "gpu/status.h"

namespace recon::gpu::onnx {

// Maps and parses `path`. External tensor data is resolved relative to the file's directory.
// Errors start with `path` and name what failed: "m.onnx: node 12 (Conv 'conv1'): attribute 'pads':
// truncated varint at byte 4031". NOT_FOUND / PERMISSION_DENIED for files that cannot be opened,
// DATA_LOSS for corrupt or truncated bytes, INVALID_ARGUMENT for well-formed but invalid content,
// UNIMPLEMENTED for valid ONNX this reader does not support.
Result<Model> read_onnx_model(const std::string& path);

// Parses a ModelProto held in `bytes`, which `owner` keeps alive (tensors share it). `base_dir` is
// where external data files are looked up; empty refuses external data.
Result<Model> parse_onnx_model(std::span<const uint8_t> bytes, std::shared_ptr<const void> owner,
                               const std::string& base_dir);

// A serialized TensorProto, e.g. test_data_set_0/input_0.pb.
Result<HostTensor> read_tensor_file(const std::string& path);
Result<HostTensor> parse_tensor(std::span<const uint8_t> bytes, std::shared_ptr<const void> owner,
                                const std::string& base_dir);

}  // namespace recon::gpu::onnx
