// Helpers shared by the weights tests (see test_files.h).
#include "tests/weights/test_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace recon::gpu::testing {

TempPath::TempPath(std::string_view stem) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string test = info != nullptr ? std::string(info->test_suite_name()) + "." + info->name() : "none";
  path_ = ::testing::TempDir() + "recon_weights_" + std::to_string(::getpid()) + "_" + test + "_" + std::string(stem);
}

TempPath::~TempPath() {
  std::remove(path_.c_str());
}

std::vector<std::byte> raw_safetensors_with_length(std::uint64_t header_len, std::string_view header,
                                                   std::size_t data_bytes) {
  std::vector<std::byte> out;
  out.reserve(8 + header.size() + data_bytes);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((header_len >> (8 * i)) & 0xFF));
  for (const char c : header) out.push_back(static_cast<std::byte>(c));
  out.insert(out.end(), data_bytes, std::byte{0x5A});
  return out;
}

std::vector<std::byte> raw_safetensors(std::string_view header, std::size_t data_bytes) {
  return raw_safetensors_with_length(header.size(), header, data_bytes);
}

void write_bytes(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace recon::gpu::testing
