// NumPy .npy files (format 1.0 and 2.0, C order, little-endian) for any numeric element type:
// what recon-run reads its inputs from and writes its outputs to. The header is parsed strictly
// and bounded; the data must be exactly shape × item size bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpu/status.h"

namespace recon::io {

struct NpyArray {
  std::string descr;  // NumPy's dtype string: "<f4", "<f2", "<i8", "|u1", "|b1"...
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

// Bytes per item of a descr recon reads, or 0 (big-endian, structured, strings...).
size_t npy_item_size(const std::string& descr);

// The file a tensor called `name` is written to: every character outside [A-Za-z0-9._-] replaced
// by '_', then ".npy" (ONNX names such as "onnx::Gemm_12" or "out/0").
std::string npy_file_name(const std::string& name);

Result<NpyArray> read_npy_file(const std::string& path);
Result<NpyArray> parse_npy(std::span<const uint8_t> bytes);
Status write_npy_file(const std::string& path, const NpyArray& array);

}  // namespace recon::io
