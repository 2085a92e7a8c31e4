// Read-only, validating access to a safetensors file (https://github.com/huggingface/safetensors):
// an 8-byte little-endian header length, a JSON header, then the raw tensor bytes.
// Files are untrusted: open() checks every offset, size and overlap before exposing any byte, and
// reports problems as values. It does not know about any model; see mast3r_weight_catalog.h.
//
// Error codes: kNotFound (missing file or tensor), kDataLoss (truncated or inconsistent file:
// bad lengths, bad JSON, bad field types, offsets out of range, size mismatch, overlaps),
// kInvalidArgument (well-formed but unsupported: an unknown dtype, a header over the size limit,
// a conversion from a non-float dtype, a destination of the wrong size).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu/status.h"
#include "gpu/weights/dtype.h"
#include "gpu/weights/mapped_file.h"

namespace recon::gpu {

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // data_offsets, relative to the start of the data section
  std::uint64_t end = 0;

  std::uint64_t numel() const;  // 1 for a scalar (empty shape); cannot overflow once validated
  std::uint64_t byte_size() const { return end - begin; }
};

// "[1024, 3, 16, 16]"
std::string shape_to_string(std::span<const std::int64_t> shape);

class SafetensorsFile {
 public:
  static constexpr std::uint64_t kMaxHeaderBytes = 100u << 20;
  static constexpr std::size_t kMaxHeaderValues = 1u << 21;

  // Memory-maps and validates the file. Messages are prefixed with the path.
  static Result<SafetensorsFile> open(const std::string& path);
  // Validates a file image already in memory (tests, fuzzing); takes ownership of the bytes.
  static Result<SafetensorsFile> from_bytes(std::vector<std::byte> bytes);

  SafetensorsFile(SafetensorsFile&&) noexcept = default;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept = default;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  // In header order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(std::string_view name) const;

  std::optional<std::string_view> metadata(std::string_view key) const;
  const std::vector<std::pair<std::string, std::string>>& metadata_entries() const { return metadata_; }

  // The tensor's raw little-endian bytes inside the mapping (no alignment guarantee).
  std::span<const std::byte> data(const TensorInfo& tensor) const;
  Result<std::span<const std::byte>> bytes(std::string_view name) const;
  std::span<const std::byte> file_bytes() const { return file_; }

  // Convert an F32, F16 or BF16 tensor. The pointer forms write numel() elements; the span forms
  // first check that the span holds exactly numel() elements.
  Status copy_as_f32(std::string_view name, float* dst) const;
  Status copy_as_f32(std::string_view name, std::span<float> dst) const;
  Status copy_as_f16(std::string_view name, std::uint16_t* dst) const;
  Status copy_as_f16(std::string_view name, std::span<std::uint16_t> dst) const;
  Result<std::vector<float>> read_f32(std::string_view name) const;

 private:
  SafetensorsFile() = default;
  static Result<SafetensorsFile> validate(SafetensorsFile file);
  Result<const TensorInfo*> convertible(std::string_view name) const;

  MappedFile mapping_;                  // set by open()
  std::vector<std::byte> owned_bytes_;  // set by from_bytes()
  std::span<const std::byte> file_;     // the whole file, in one of the two above
  std::span<const std::byte> data_;     // the data section after the header
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

}  // namespace recon::gpu
