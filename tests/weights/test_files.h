// Helpers shared by the weights tests: unique temporary paths and hand-built safetensors images.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace recon::gpu::testing {

// A path in the test temp dir that is unique to this process and test, removed on destruction.
class TempPath {
 public:
  explicit TempPath(std::string_view stem);
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  ~TempPath();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// 8-byte little-endian `header_len` (defaults to header.size()), the header text, then
// `data_bytes` bytes of 0x5A.
std::vector<std::byte> raw_safetensors(std::string_view header, std::size_t data_bytes);
std::vector<std::byte> raw_safetensors_with_length(std::uint64_t header_len, std::string_view header,
                                                   std::size_t data_bytes);

void write_bytes(const std::string& path, const std::vector<std::byte>& bytes);
std::string read_text(const std::string& path);

}  // namespace recon::gpu::testing
