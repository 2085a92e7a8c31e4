// Builds a valid safetensors file in memory and writes it out, for tests and conversion tools.
// Tensors are stored in insertion order, contiguously; the header is space-padded to a multiple of
// 8 bytes so the data section is 8-aligned like the reference writer's. Holds every byte in memory.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gpu/status.h"
#include "gpu/weights/dtype.h"

namespace recon::gpu {

class SafetensorsWriter {
 public:
  void add_metadata(std::string key, std::string value);

  // kInvalidArgument for a duplicate or reserved name, a negative dimension, or a byte count
  // that does not match dtype × shape.
  Status add_tensor(std::string name, Dtype dtype, std::vector<std::int64_t> shape, std::span<const std::byte> data);
  Status add_f32(std::string name, std::vector<std::int64_t> shape, std::span<const float> values);
  Status add_f16(std::string name, std::vector<std::int64_t> shape, std::span<const std::uint16_t> bits);

  std::vector<std::byte> serialize() const;
  // Writes to "<path>.tmp" and renames it over `path`, so readers never see a partial file.
  Status write(const std::string& path) const;

 private:
  struct Entry {
    std::string name;
    Dtype dtype;
    std::vector<std::int64_t> shape;
    std::vector<std::byte> bytes;
  };
  std::vector<std::pair<std::string, std::string>> metadata_;
  std::vector<Entry> entries_;
};

}  // namespace recon::gpu
