// Every way a safetensors file can be broken gives the right status code and a message naming
// the offending tensor; none of them crashes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpu/weights/safetensors.h"
#include "gpu/weights/safetensors_writer.h"
#include "tests/weights/test_files.h"

namespace recon::gpu {
namespace {

using ::testing::HasSubstr;
using testing::raw_safetensors;

Status open_bytes(std::vector<std::byte> bytes) {
  return SafetensorsFile::from_bytes(std::move(bytes)).status();
}
Status open_header(const std::string& header, std::size_t data_bytes) {
  return open_bytes(raw_safetensors(header, data_bytes));
}

// One tensor "w" with the given JSON fields, and `data` bytes after the header.
Status open_w(const std::string& fields, std::size_t data_bytes) {
  return open_header("{\"w\":{" + fields + "}}", data_bytes);
}

void expect_error(const Status& s, StatusCode code, const std::string& needle) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_THAT(s.message(), HasSubstr(needle));
}

TEST(SafetensorsCorruption, FilesShorterThanTheLengthFieldAreDataLoss) {
  for (std::size_t n = 0; n < 8; ++n) {
    expect_error(open_bytes(std::vector<std::byte>(n, std::byte{0})), StatusCode::kDataLoss, "too short");
  }
}

TEST(SafetensorsCorruption, HeaderLengthBeyondTheFileIsDataLoss) {
  expect_error(open_bytes(testing::raw_safetensors_with_length(100, "{}", 10)), StatusCode::kDataLoss,
               "exceeds the 12 bytes");
  expect_error(open_bytes(testing::raw_safetensors_with_length(~0ull, "{}", 0)), StatusCode::kDataLoss,
               "header length 18446744073709551615");
}

TEST(SafetensorsCorruption, HeaderOverTheSizeLimitIsInvalidArgument) {
  const std::uint64_t n = SafetensorsFile::kMaxHeaderBytes + 1;
  std::vector<std::byte> bytes = testing::raw_safetensors_with_length(n, "", n);
  expect_error(open_bytes(std::move(bytes)), StatusCode::kInvalidArgument, "exceeds the limit");
}

TEST(SafetensorsCorruption, HeaderThatIsNotJsonIsDataLoss) {
  expect_error(open_header("{\"w\": nope}", 0), StatusCode::kDataLoss, "not valid JSON");
  expect_error(open_header("", 0), StatusCode::kDataLoss, "not valid JSON");
  expect_error(open_header(std::string("{}\0\0", 4), 0), StatusCode::kDataLoss, "not valid JSON");
  expect_error(open_header("{\"a\xFF\":1}", 0), StatusCode::kDataLoss, "UTF-8");
  expect_error(open_header("[]", 0), StatusCode::kDataLoss, "must be a JSON object");
  expect_error(open_header(std::string(100, '[') + std::string(100, ']'), 0), StatusCode::kDataLoss, "nesting");
}

TEST(SafetensorsCorruption, DuplicateTensorNamesAreDataLoss) {
  const std::string t = R"({"dtype":"U8","shape":[1],"data_offsets":[0,1]})";
  expect_error(open_header("{\"w\":" + t + ",\"w\":" + t + "}", 1), StatusCode::kDataLoss, "duplicate key \"w\"");
}

TEST(SafetensorsCorruption, MalformedEntriesNameTheTensor) {
  expect_error(open_header(R"({"w": 3})", 0), StatusCode::kDataLoss, "tensor 'w': entry must be an object");
  expect_error(open_w(R"("dtype":"F32","shape":[1])", 4), StatusCode::kDataLoss, "tensor 'w': needs dtype");
  expect_error(open_w(R"("dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1)", 4), StatusCode::kDataLoss,
               "tensor 'w': unexpected field 'extra'");
  expect_error(open_w(R"("dtype":5,"shape":[1],"data_offsets":[0,4])", 4), StatusCode::kDataLoss,
               "tensor 'w': dtype must be a string");
  expect_error(open_w(R"("dtype":"F32","shape":"1","data_offsets":[0,4])", 4), StatusCode::kDataLoss,
               "tensor 'w': shape");
  expect_error(open_w(R"("dtype":"F32","shape":[1],"data_offsets":[0])", 4), StatusCode::kDataLoss,
               "tensor 'w': data_offsets must be two");
  expect_error(open_w(R"("dtype":"F32","shape":[1],"data_offsets":[0,4,8])", 8), StatusCode::kDataLoss,
               "tensor 'w': data_offsets must be two");
  expect_error(open_w(R"("dtype":"F32","shape":[1],"data_offsets":[0,4.0])", 4), StatusCode::kDataLoss,
               "tensor 'w': data_offsets must be two");
  expect_error(open_w(R"("dtype":"F32","shape":[1],"data_offsets":[-4,0])", 4), StatusCode::kDataLoss,
               "tensor 'w': data_offsets must be two");
}

TEST(SafetensorsCorruption, UnknownDtypeIsInvalidArgument) {
  expect_error(open_w(R"("dtype":"F4","shape":[2],"data_offsets":[0,1])", 1), StatusCode::kInvalidArgument,
               "tensor 'w': unsupported dtype 'F4'");
  expect_error(open_w(R"("dtype":"f32","shape":[1],"data_offsets":[0,4])", 4), StatusCode::kInvalidArgument,
               "tensor 'w': unsupported dtype 'f32'");
}

TEST(SafetensorsCorruption, NegativeFractionalAndHugeShapesAreDataLoss) {
  expect_error(open_w(R"("dtype":"F32","shape":[-1],"data_offsets":[0,4])", 4), StatusCode::kDataLoss,
               "tensor 'w': shape must be an array of non-negative integers");
  expect_error(open_w(R"("dtype":"F32","shape":[1.5],"data_offsets":[0,4])", 4), StatusCode::kDataLoss,
               "tensor 'w': shape");
  expect_error(open_w(R"("dtype":"F32","shape":[1e3],"data_offsets":[0,4000])", 4000), StatusCode::kDataLoss,
               "tensor 'w': shape");
  expect_error(open_w(R"("dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,4])", 4), StatusCode::kDataLoss,
               "tensor 'w': shape");
  // 2^32 · 2^32 · 4 bytes wraps to 0 in 64 bits: must be caught, not accepted as empty.
  expect_error(open_w(R"("dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0])", 0),
               StatusCode::kDataLoss, "tensor 'w': shape [4294967296, 4294967296] overflows");
  expect_error(open_w(R"("dtype":"U8","shape":[9223372036854775807,3],"data_offsets":[0,0])", 0), StatusCode::kDataLoss,
               "overflows");
  // Fits in 64 bits but the file cannot hold it.
  expect_error(open_w(R"("dtype":"F32","shape":[1000000,1000000],"data_offsets":[0,4])", 4), StatusCode::kDataLoss,
               "tensor 'w': data_offsets [0, 4] hold 4 bytes but F32 [1000000, 1000000] needs 4000000000000");
}

TEST(SafetensorsCorruption, OffsetsOutOfRangeAreDataLoss) {
  expect_error(open_w(R"("dtype":"F32","shape":[1],"data_offsets":[4,0])", 4), StatusCode::kDataLoss,
               "tensor 'w': data_offsets [4, 0] begin after end");
  expect_error(open_w(R"("dtype":"F32","shape":[1],"data_offsets":[0,4])", 3), StatusCode::kDataLoss,
               "tensor 'w': data_offsets [0, 4] run past the 3-byte data section");
  expect_error(open_w(R"("dtype":"F32","shape":[1],"data_offsets":[18446744073709551612,18446744073709551616])", 4),
               StatusCode::kDataLoss, "tensor 'w': data_offsets must be two");
  expect_error(open_w(R"("dtype":"F32","shape":[1],"data_offsets":[9223372036854775803,9223372036854775807])", 4),
               StatusCode::kDataLoss, "run past");
}

TEST(SafetensorsCorruption, SizeMismatchIsDataLoss) {
  expect_error(open_w(R"("dtype":"F32","shape":[2],"data_offsets":[0,4])", 8), StatusCode::kDataLoss,
               "tensor 'w': data_offsets [0, 4] hold 4 bytes but F32 [2] needs 8");
  expect_error(open_w(R"("dtype":"BF16","shape":[2,2],"data_offsets":[0,9])", 9), StatusCode::kDataLoss, "needs 8");
}

TEST(SafetensorsCorruption, OverlappingTensorsAreDataLossNamingBoth) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  expect_error(open_header(header, 12), StatusCode::kDataLoss, "tensors 'a' [0, 8) and 'b' [4, 12) overlap");
  const std::string same = R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})";
  expect_error(open_header(same, 4), StatusCode::kDataLoss, "overlap");
  // Touching ranges, gaps and empty tensors at the same offset are all fine.
  const std::string fine = R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                           R"("z":{"dtype":"U8","shape":[0],"data_offsets":[2,2]},)"
                           R"("b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]},)"
                           R"("c":{"dtype":"U8","shape":[2],"data_offsets":[8,10]}})";
  EXPECT_TRUE(open_header(fine, 10).is_ok());
}

TEST(SafetensorsCorruption, MetadataMustMapStringsToStrings) {
  expect_error(open_header(R"({"__metadata__":{"k":1}})", 0), StatusCode::kDataLoss,
               "__metadata__ entry 'k' must be a string");
  expect_error(open_header(R"({"__metadata__":["k"]})", 0), StatusCode::kDataLoss, "__metadata__ must be an object");
  EXPECT_TRUE(open_header(R"({"__metadata__":{}})", 0).is_ok());
}

TEST(SafetensorsCorruption, EveryTruncationOfAValidFileIsDataLoss) {
  SafetensorsWriter w;
  w.add_metadata("k", "v");
  const std::vector<float> a = {1, 2, 3, 4};
  ASSERT_TRUE(w.add_f32("a", {2, 2}, a).is_ok());
  ASSERT_TRUE(w.add_f32("b", {4}, a).is_ok());
  const std::vector<std::byte> full = w.serialize();
  ASSERT_TRUE(open_bytes(full).is_ok());
  for (std::size_t n = 0; n < full.size(); ++n) {
    const Status s = open_bytes(std::vector<std::byte>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n)));
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << "prefix of " << n << " bytes: " << s.to_string();
  }
}

TEST(SafetensorsCorruption, TruncatedFileOnDiskNamesThePathAndTensor) {
  SafetensorsWriter w;
  const std::vector<float> a = {1, 2, 3, 4};
  ASSERT_TRUE(w.add_f32("only", {4}, a).is_ok());
  std::vector<std::byte> bytes = w.serialize();
  bytes.resize(bytes.size() - 1);
  testing::TempPath path("truncated.safetensors");
  testing::write_bytes(path.path(), bytes);
  const Result<SafetensorsFile> r = SafetensorsFile::open(path.path());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr(path.path()));
  EXPECT_THAT(r.status().message(), HasSubstr("tensor 'only'"));
  EXPECT_THAT(r.status().message(), HasSubstr("truncated"));
}

}  // namespace
}  // namespace recon::gpu
