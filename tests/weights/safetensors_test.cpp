// SafetensorsFile / SafetensorsWriter round trips and the conversion helpers.
#include "gpu/weights/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "gpu/weights/half_float.h"
#include "gpu/weights/safetensors_writer.h"
#include "tests/weights/test_files.h"

namespace recon::gpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempPath;

std::vector<std::byte> bf16_bytes(std::initializer_list<std::uint16_t> values) {
  std::vector<std::byte> out;
  for (const std::uint16_t v : values) {
    out.push_back(static_cast<std::byte>(v & 0xFF));
    out.push_back(static_cast<std::byte>(v >> 8));
  }
  return out;
}

TEST(Safetensors, RoundTripsTensorsAndMetadataThroughAFile) {
  SafetensorsWriter w;
  w.add_metadata("format", "pt");
  w.add_metadata("note", "h\xC3\xA9llo \"quoted\"\n");
  const std::vector<float> a = {1.0f, -2.5f, 3.25f, 1e-30f, -0.0f, 65504.0f};
  ASSERT_TRUE(w.add_f32("layer.weight", {2, 3}, a).is_ok());
  const std::vector<std::uint16_t> h = {0x3C00, 0xC000};
  ASSERT_TRUE(w.add_f16("layer.bias", {2}, h).is_ok());
  const std::int32_t ints[] = {7, -8, 9};
  ASSERT_TRUE(w.add_tensor("counts", Dtype::kI32, {3}, std::as_bytes(std::span(ints))).is_ok());

  TempPath path("model.safetensors");
  ASSERT_TRUE(w.write(path.path()).is_ok());
  Result<SafetensorsFile> r = SafetensorsFile::open(path.path());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const SafetensorsFile& f = *r;

  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.tensors()[0].name, "layer.weight");
  EXPECT_EQ(f.tensors()[0].dtype, Dtype::kF32);
  EXPECT_THAT(f.tensors()[0].shape, ElementsAre(2, 3));
  EXPECT_EQ(f.tensors()[0].begin, 0u);
  EXPECT_EQ(f.tensors()[0].end, 24u);
  EXPECT_EQ(f.tensors()[1].begin, 24u);
  EXPECT_EQ(f.tensors()[1].byte_size(), 4u);
  EXPECT_EQ(f.tensors()[2].numel(), 3u);
  EXPECT_EQ(f.metadata("format"), "pt");
  EXPECT_EQ(f.metadata("note"), "h\xC3\xA9llo \"quoted\"\n");
  EXPECT_FALSE(f.metadata("absent").has_value());
  EXPECT_EQ(f.metadata_entries().size(), 2u);

  Result<std::vector<float>> back = f.read_f32("layer.weight");
  ASSERT_TRUE(back.is_ok());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(std::bit_cast<std::uint32_t>((*back)[i]), std::bit_cast<std::uint32_t>(a[i])) << i;
  }
  Result<std::vector<float>> bias = f.read_f32("layer.bias");
  ASSERT_TRUE(bias.is_ok());
  EXPECT_THAT(*bias, ElementsAre(1.0f, -2.0f));

  Result<std::span<const std::byte>> raw = f.bytes("counts");
  ASSERT_TRUE(raw.is_ok());
  ASSERT_EQ(raw->size(), sizeof ints);
  EXPECT_EQ(std::memcmp(raw->data(), ints, sizeof ints), 0);
}

TEST(Safetensors, WriterPadsTheHeaderSoDataIsEightByteAligned) {
  SafetensorsWriter w;
  const float v = 1.0f;
  ASSERT_TRUE(w.add_f32("x", {1}, std::span(&v, 1)).is_ok());
  const std::vector<std::byte> bytes = w.serialize();
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 4);
  EXPECT_EQ(static_cast<char>(bytes[8]), '{');
  EXPECT_TRUE(SafetensorsFile::from_bytes(bytes).is_ok());
}

TEST(Safetensors, ConvertsF32F16AndBf16Sources) {
  SafetensorsWriter w;
  const std::vector<float> f32 = {1.0f, 65520.0f, 6e-8f, -0.0f, std::nanf("")};
  ASSERT_TRUE(w.add_f32("f32", {5}, f32).is_ok());
  const std::vector<std::uint16_t> f16 = {0x3C00, 0x7BFF, 0x0001, 0x8000, 0x7E00};
  ASSERT_TRUE(w.add_f16("f16", {5}, f16).is_ok());
  ASSERT_TRUE(w.add_tensor("bf16", Dtype::kBF16, {5}, bf16_bytes({0x3F80, 0x4049, 0x0001, 0x8000, 0x7FC0})).is_ok());
  Result<SafetensorsFile> r = SafetensorsFile::from_bytes(w.serialize());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();

  std::vector<std::uint16_t> h(5);
  ASSERT_TRUE(r->copy_as_f16("f32", h.data()).is_ok());
  EXPECT_EQ(h[0], 0x3C00);
  EXPECT_EQ(h[1], 0x7C00);  // 65520 → inf
  EXPECT_EQ(h[2], 0x0001);  // 6e-8 → smallest subnormal
  EXPECT_EQ(h[3], 0x8000);  // -0
  EXPECT_EQ(h[4] & 0x7C00, 0x7C00);
  EXPECT_NE(h[4] & 0x03FF, 0);  // NaN stays NaN

  ASSERT_TRUE(r->copy_as_f16("f16", h.data()).is_ok());
  EXPECT_EQ(h, f16);

  std::vector<float> out(5);
  ASSERT_TRUE(r->copy_as_f32("f16", out.data()).is_ok());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 65504.0f);
  EXPECT_EQ(out[2], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::signbit(out[3]));
  EXPECT_TRUE(std::isnan(out[4]));

  ASSERT_TRUE(r->copy_as_f32("bf16", std::span<float>(out)).is_ok());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 3.140625f);
  EXPECT_EQ(out[2], std::ldexp(1.0f, -133));
  EXPECT_TRUE(std::signbit(out[3]));
  EXPECT_TRUE(std::isnan(out[4]));

  ASSERT_TRUE(r->copy_as_f16("bf16", h.data()).is_ok());
  EXPECT_EQ(h[0], 0x3C00);
  EXPECT_EQ(h[1], f32_to_f16(3.140625f));
  EXPECT_EQ(h[2], 0x0000);  // 2^-133 is far below fp16's range
  EXPECT_EQ(h[3], 0x8000);
}

TEST(Safetensors, ConversionRejectsUnknownNamesNonFloatDtypesAndWrongSizes) {
  SafetensorsWriter w;
  const std::int64_t big[] = {1, 2};
  ASSERT_TRUE(w.add_tensor("ids", Dtype::kI64, {2}, std::as_bytes(std::span(big))).is_ok());
  const std::vector<float> v = {1, 2, 3};
  ASSERT_TRUE(w.add_f32("v", {3}, v).is_ok());
  Result<SafetensorsFile> r = SafetensorsFile::from_bytes(w.serialize());
  ASSERT_TRUE(r.is_ok());
  std::vector<float> out(3);
  EXPECT_EQ(r->copy_as_f32("nope", out.data()).code(), StatusCode::kNotFound);
  const Status s = r->copy_as_f32("ids", out.data());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'ids'"));
  EXPECT_THAT(s.message(), HasSubstr("I64"));
  std::vector<float> small(2);
  const Status t = r->copy_as_f32("v", std::span<float>(small));
  EXPECT_EQ(t.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(t.message(), HasSubstr("3 elements"));
  std::vector<std::uint16_t> h(4);
  EXPECT_EQ(r->copy_as_f16("v", std::span<std::uint16_t>(h)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r->bytes("nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r->read_f32("ids").status().code(), StatusCode::kInvalidArgument);
}

TEST(Safetensors, MissingFileIsNotFoundAndDirectoryIsInvalid) {
  const Result<SafetensorsFile> missing = SafetensorsFile::open("/nonexistent/dir/model.safetensors");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/dir/model.safetensors"));
  const Result<SafetensorsFile> dir = SafetensorsFile::open(::testing::TempDir());
  EXPECT_FALSE(dir.is_ok());
  EXPECT_EQ(dir.status().code(), StatusCode::kInvalidArgument);
}

TEST(Safetensors, UnreadableFileIsPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads everything";
  TempPath path("locked.safetensors");
  testing::write_bytes(path.path(), testing::raw_safetensors("{}", 0));
  ASSERT_EQ(::chmod(path.path().c_str(), 0), 0);
  EXPECT_EQ(SafetensorsFile::open(path.path()).status().code(), StatusCode::kPermissionDenied);
}

TEST(Safetensors, AcceptsAnEmptyHeaderAndPaddingSpaces) {
  EXPECT_TRUE(SafetensorsFile::from_bytes(testing::raw_safetensors("{}", 0)).is_ok());
  EXPECT_TRUE(SafetensorsFile::from_bytes(testing::raw_safetensors("{}      ", 0)).is_ok());
  TempPath path("empty.safetensors");
  testing::write_bytes(path.path(), testing::raw_safetensors("{}", 0));
  Result<SafetensorsFile> r = SafetensorsFile::open(path.path());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(r->tensors().empty());
}

TEST(Safetensors, ScalarAndZeroSizedTensorsAreValid) {
  const std::string header = R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
                             R"("e":{"dtype":"F16","shape":[0,5],"data_offsets":[4,4]},)"
                             R"("e2":{"dtype":"F32","shape":[3,0],"data_offsets":[4,4]}})";
  Result<SafetensorsFile> r = SafetensorsFile::from_bytes(testing::raw_safetensors(header, 4));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->find("s")->numel(), 1u);
  EXPECT_EQ(r->find("e")->numel(), 0u);
  std::vector<float> none;
  EXPECT_TRUE(r->copy_as_f32("e", std::span<float>(none)).is_ok());
  std::vector<std::uint16_t> none16;
  EXPECT_TRUE(r->copy_as_f16("e2", std::span<std::uint16_t>(none16)).is_ok());
}

TEST(Safetensors, ReadsEveryDtypeAsBytes) {
  std::string header = "{";
  std::size_t offset = 0;
  const std::pair<const char*, std::size_t> dtypes[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"U16", 2}, {"I16", 2}, {"F16", 2},
      {"BF16", 2}, {"U32", 4}, {"I32", 4}, {"F32", 4},     {"U64", 8},     {"I64", 8}, {"F64", 8},
  };
  for (const auto& [name, size] : dtypes) {
    if (offset != 0) header += ",";
    header += "\"t_" + std::string(name) + "\":{\"dtype\":\"" + name + "\",\"shape\":[3],\"data_offsets\":[" +
              std::to_string(offset) + "," + std::to_string(offset + 3 * size) + "]}";
    offset += 3 * size;
  }
  header += "}";
  Result<SafetensorsFile> r = SafetensorsFile::from_bytes(testing::raw_safetensors(header, offset));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  for (const auto& [name, size] : dtypes) {
    const TensorInfo* t = r->find(std::string("t_") + name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_STREQ(dtype_name(t->dtype), name);
    EXPECT_EQ(dtype_size(t->dtype), size);
    EXPECT_EQ(r->data(*t).size(), 3 * size);
  }
}

TEST(Safetensors, WriterRejectsBadTensors) {
  SafetensorsWriter w;
  const std::vector<float> v = {1, 2};
  EXPECT_EQ(w.add_f32("x", {3}, v).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_f32("x", {-2}, v).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_f32("__metadata__", {2}, v).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(w.add_f32("x", {2}, v).is_ok());
  EXPECT_EQ(w.add_f32("x", {2}, v).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.add_f32("y", {1LL << 62, 8}, v).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.write("/nonexistent/dir/out.safetensors").code(), StatusCode::kUnavailable);
}

TEST(Safetensors, AnOpenedFileSurvivesBeingMoved) {
  SafetensorsWriter w;
  const std::vector<float> v = {4, 5, 6};
  ASSERT_TRUE(w.add_f32("v", {3}, v).is_ok());
  TempPath path("moved.safetensors");
  ASSERT_TRUE(w.write(path.path()).is_ok());
  Result<SafetensorsFile> r = SafetensorsFile::open(path.path());
  ASSERT_TRUE(r.is_ok());
  SafetensorsFile moved = std::move(r).value();
  SafetensorsFile again = std::move(moved);
  Result<std::vector<float>> back = again.read_f32("v");
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(*back, v);
  Result<SafetensorsFile> mem = SafetensorsFile::from_bytes(w.serialize());
  ASSERT_TRUE(mem.is_ok());
  SafetensorsFile mem_moved = std::move(mem).value();
  EXPECT_EQ(mem_moved.read_f32("v").value(), v);
}

}  // namespace
}  // namespace recon::gpu
