// .npy reading and writing: round trips of every dtype recon-run maps, and the refusals (wrong
// magic, Fortran order, big-endian or structured dtypes, data shorter or longer than the shape).
#include "tools/io/npy.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace recon::io {
namespace {

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> with_header(const std::string& header, size_t data_bytes) {
  std::string s = "\x93NUMPY";
  s += '\x01';
  s += '\x00';
  s += static_cast<char>(header.size());
  s += '\x00';
  s += header;
  s.append(data_bytes, '\x07');
  return {s.begin(), s.end()};
}

TEST(Npy, EveryDtypeRoundTripsThroughAFile) {
  const std::string path = (std::filesystem::temp_directory_path() / "recon_npy_test.npy").string();
  for (const char* descr : {"<f4", "<f2", "<f8", "<i8", "<i4", "|u1", "|b1"}) {
    NpyArray a{descr, {2, 3}, std::vector<uint8_t>(6 * npy_item_size(descr))};
    for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = static_cast<uint8_t>(i * 7 + 1);
    ASSERT_TRUE(write_npy_file(path, a).is_ok());
    Result<NpyArray> b = read_npy_file(path);
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    EXPECT_EQ(b->descr, descr);
    EXPECT_EQ(b->shape, a.shape);
    EXPECT_EQ(b->data, a.data);
    EXPECT_EQ(file_bytes(path).size() % 64, a.data.size() % 64) << "header padded to 64 bytes";
  }
  NpyArray scalar{"<f4", {}, std::vector<uint8_t>(4, 1)};
  ASSERT_TRUE(write_npy_file(path, scalar).is_ok());
  Result<NpyArray> s = read_npy_file(path);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_TRUE(s->shape.empty());
  std::filesystem::remove(path);
}

TEST(Npy, MalformedFilesAreRefusedWithAReason) {
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_TRUE(parse_npy(with_header(ok, 24)).is_ok());
  EXPECT_NE(parse_npy(with_header(ok, 23)).status().message().find("the header says 24"), std::string::npos);
  EXPECT_FALSE(parse_npy(with_header(ok, 25)).is_ok());
  EXPECT_FALSE(parse_npy(with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24)).is_ok());
  EXPECT_FALSE(parse_npy(with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24)).is_ok());
  EXPECT_FALSE(parse_npy(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", 24)).is_ok());
  EXPECT_FALSE(parse_npy(with_header("{'fortran_order': False, 'shape': (2, 3), }", 24)).is_ok());
  std::vector<uint8_t> bad_magic = with_header(ok, 24);
  bad_magic[1] = 'X';
  EXPECT_FALSE(parse_npy(bad_magic).is_ok());
  std::vector<uint8_t> truncated = with_header(ok, 0);
  truncated.resize(20);
  EXPECT_FALSE(parse_npy(truncated).is_ok());
  EXPECT_FALSE(write_npy_file("/nonexistent-dir/x.npy", NpyArray{"<f4", {1}, std::vector<uint8_t>(4)}).is_ok());
  EXPECT_FALSE(write_npy_file("/tmp/x.npy", NpyArray{"<f4", {2}, std::vector<uint8_t>(4)}).is_ok());
}

TEST(Npy, FileNamesKeepOnlyPortableCharacters) {
  EXPECT_EQ(npy_file_name("pts3d_1"), "pts3d_1.npy");
  EXPECT_EQ(npy_file_name("onnx::Gemm_12"), "onnx__Gemm_12.npy");
  EXPECT_EQ(npy_file_name("out/0 x"), "out_0_x.npy");
}

}  // namespace
}  // namespace recon::io
