// Deterministic mutation fuzzing of SafetensorsFile: thousands of byte flips, JSON-aware edits,
// truncations and extensions of a valid file. Each must open cleanly or fail with a data-loss or
// invalid-argument status; files that open must serve every tensor within bounds. Meant to be run
// under -fsanitize=address,undefined as well (see tests/weights/fuzz_safetensors.cpp for libFuzzer).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "gpu/weights/mast3r_config.h"
#include "gpu/weights/safetensors.h"
#include "gpu/weights/safetensors_writer.h"
#include "tests/weights/test_files.h"

namespace recon::gpu {
namespace {

std::vector<std::byte> seed_file() {
  SafetensorsWriter w;
  w.add_metadata("format", "pt");
  w.add_metadata("mast3r.config", R"({"enc_depth": 2, "depth_mode": ["exp", "-inf", "inf"]})");
  std::vector<float> a(12);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i) * 0.5f - 2.0f;
  EXPECT_TRUE(w.add_f32("enc.weight", {3, 4}, a).is_ok());
  const std::vector<std::uint16_t> h = {0x3C00, 0x7BFF, 0x0001, 0x8000, 0x7E00, 0xFC00};
  EXPECT_TRUE(w.add_f16("enc.bias", {6}, h).is_ok());
  EXPECT_TRUE(w.add_tensor("bf", Dtype::kBF16, {2, 2}, std::as_bytes(std::span(h).first(4))).is_ok());
  const std::uint8_t u[] = {1, 2, 3};
  EXPECT_TRUE(w.add_tensor("u", Dtype::kU8, {3}, std::as_bytes(std::span(u))).is_ok());
  EXPECT_TRUE(w.add_tensor("empty", Dtype::kF32, {0, 7}, {}).is_ok());
  return w.serialize();
}

// Opens the image and, when that succeeds, touches everything a loader would.
void exercise(std::vector<std::byte> bytes) {
  const std::size_t size = bytes.size();
  Result<SafetensorsFile> r = SafetensorsFile::from_bytes(std::move(bytes));
  if (!r.is_ok()) {
    const StatusCode code = r.status().code();
    ASSERT_TRUE(code == StatusCode::kDataLoss || code == StatusCode::kInvalidArgument) << r.status().to_string();
    ASSERT_FALSE(r.status().message().empty());
    return;
  }
  const SafetensorsFile& f = *r;
  for (const TensorInfo& t : f.tensors()) {
    const std::span<const std::byte> d = f.data(t);
    ASSERT_EQ(d.size(), t.byte_size());
    ASSERT_LE(t.end, size);
    ASSERT_GE(d.data(), f.file_bytes().data());
    ASSERT_LE(d.data() + d.size(), f.file_bytes().data() + f.file_bytes().size());
    ASSERT_EQ(t.byte_size(), t.numel() * dtype_size(t.dtype));
    if (is_float_convertible(t.dtype)) {
      std::vector<float> out(t.numel());
      ASSERT_TRUE(f.copy_as_f32(t.name, std::span<float>(out)).is_ok());
      std::vector<std::uint16_t> h(t.numel());
      ASSERT_TRUE(f.copy_as_f16(t.name, std::span<std::uint16_t>(h)).is_ok());
    }
    ASSERT_EQ(f.find(t.name), &t);
  }
  // The config parser sees mutated metadata too.
  const Result<Mast3rConfig> c = Mast3rConfig::from_safetensors(f);
  if (!c.is_ok()) {
    ASSERT_EQ(c.status().code(), StatusCode::kInvalidArgument) << c.status().to_string();
  }
}

std::vector<std::byte> mutate(const std::vector<std::byte>& seed, std::mt19937_64& rng) {
  std::vector<std::byte> b = seed;
  std::uint64_t header_len = 0;
  std::memcpy(&header_len, b.data(), 8);
  auto pick = [&](std::size_t lo, std::size_t hi) {  // inclusive
    return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
  };
  static constexpr char kJsonish[] = "{}[],:\"0123456789-+.eE \\u";
  const int edits = static_cast<int>(pick(1, 4));
  for (int e = 0; e < edits && !b.empty(); ++e) {
    switch (pick(0, 7)) {
      case 0:  // flip one bit anywhere
        b[pick(0, b.size() - 1)] ^= static_cast<std::byte>(1u << pick(0, 7));
        break;
      case 1:  // random byte anywhere
        b[pick(0, b.size() - 1)] = static_cast<std::byte>(pick(0, 255));
        break;
      case 2:  // JSON-significant character inside the header
        if (b.size() > 8) {
          b[pick(8, std::min<std::size_t>(b.size() - 1, 8 + header_len))] =
              static_cast<std::byte>(kJsonish[pick(0, sizeof kJsonish - 2)]);
        }
        break;
      case 3: {  // replace a digit in the header by another digit (hits offsets and shapes)
        std::vector<std::size_t> digits;
        for (std::size_t i = 8; i < std::min<std::size_t>(b.size(), 8 + header_len); ++i) {
          const char c = static_cast<char>(b[i]);
          if (c >= '0' && c <= '9') digits.push_back(i);
        }
        if (!digits.empty()) b[digits[pick(0, digits.size() - 1)]] = static_cast<std::byte>('0' + pick(0, 9));
        break;
      }
      case 4:  // truncate
        b.resize(pick(0, b.size() - 1));
        break;
      case 5:  // extend with junk
        b.insert(b.end(), pick(1, 64), static_cast<std::byte>(pick(0, 255)));
        break;
      case 6:  // corrupt the header length field
        b[pick(0, std::min<std::size_t>(7, b.size() - 1))] = static_cast<std::byte>(pick(0, 255));
        break;
      case 7:  // insert a byte inside the header (shifts everything after it)
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(pick(std::min<std::size_t>(8, b.size()), b.size())),
                 static_cast<std::byte>(kJsonish[pick(0, sizeof kJsonish - 2)]));
        break;
    }
  }
  return b;
}

TEST(SafetensorsMutation, TwentyThousandMutantsNeverCrashAndStayInBounds) {
  const std::vector<std::byte> seed = seed_file();
  ASSERT_TRUE(SafetensorsFile::from_bytes(seed).is_ok());
  std::mt19937_64 rng(0x5AFE7E45u);
  int opened = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::byte> m = mutate(seed, rng);
    if (SafetensorsFile::from_bytes(m).is_ok()) ++opened;
    ASSERT_NO_FATAL_FAILURE(exercise(std::move(m))) << "mutant " << i;
  }
  // Some mutants (digit swaps inside data, metadata edits) must still be valid files, or the
  // mutator is not reaching the deeper checks.
  EXPECT_GT(opened, 100);
  EXPECT_LT(opened, 20000);
}

TEST(SafetensorsMutation, MutantsOnDiskGoThroughTheMappedPath) {
  const std::vector<std::byte> seed = seed_file();
  std::mt19937_64 rng(42);
  testing::TempPath path("mutant.safetensors");
  for (int i = 0; i < 300; ++i) {
    const std::vector<std::byte> m = mutate(seed, rng);
    testing::write_bytes(path.path(), m);
    const Result<SafetensorsFile> from_disk = SafetensorsFile::open(path.path());
    const Result<SafetensorsFile> from_memory = SafetensorsFile::from_bytes(m);
    ASSERT_EQ(from_disk.is_ok(), from_memory.is_ok()) << "mutant " << i << ": " << from_disk.status().to_string();
    ASSERT_EQ(from_disk.status().code(), from_memory.status().code());
  }
}

}  // namespace
}  // namespace recon::gpu
