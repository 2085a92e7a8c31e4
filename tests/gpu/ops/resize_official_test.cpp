// The GPU official image preparation against the CPU one (tools/io/official_resize.h, bit-exact
// with Pillow) and against Pillow's own output (tests/io/data): byte for byte, over down- and
// up-scaling, odd sizes, landscape/portrait/square, images already at model size, each pass
// alone, row strides and byte offsets, sources split over several bindings, an imported host
// mapping as the source; then every kind of bad input.
#include "gpu/ops/resize_official.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <random>
#include <string>

#include "gpu/host_import.h"
#include "gpu/ops/layout.h"
#include "tests/gpu/gpu_test_util.h"
#include "tools/io/official_resize.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

// Random pixels: every tap sees unrelated values, so any coefficient or rounding slip shows.
io::Image random_image(int height, int width, uint32_t seed) {
  io::Image img;
  img.width = width;
  img.height = height;
  img.pixels.resize(static_cast<size_t>(width) * height * 3);
  std::mt19937 gen(seed);
  for (auto& p : img.pixels) p = static_cast<uint8_t>(gen());
  return img;
}

// `img` copied into a byte buffer at `offset` with rows `stride` apart (padding is garbage).
std::vector<uint8_t> with_layout(const io::Image& img, size_t offset, size_t stride) {
  std::vector<uint8_t> bytes(offset + (img.height - 1) * stride + img.stride() + 13, 0x5A);
  for (int y = 0; y < img.height; ++y) {
    std::memcpy(&bytes[offset + y * stride], &img.pixels[y * img.stride()], img.stride());
  }
  return bytes;
}

class ResizeOfficial : public GpuTest {
 protected:
  // GPU result of preparing `img` placed at (offset, stride) in a device buffer.
  std::vector<uint8_t> gpu_prepare(const io::Image& img, uint32_t long_side, size_t offset, size_t stride) {
    const std::vector<uint8_t> bytes = with_layout(img, offset, stride);
    auto source = Tensor::from_host(rt(), DType::kU8, {static_cast<int64_t>(bytes.size())}, bytes.data(), bytes.size());
    EXPECT_TRUE(source.is_ok()) << source.status().to_string();
    if (!source.is_ok()) return {};
    const ops::RgbImageSource src{*source, offset, static_cast<uint32_t>(img.height), static_cast<uint32_t>(img.width),
                                  static_cast<uint32_t>(stride)};
    auto out = ops::prepare_official_images(rt(), std::span(&src, 1), long_side);
    EXPECT_TRUE(out.is_ok()) << out.status().to_string();
    if (!out.is_ok()) return {};
    std::vector<uint8_t> got((*out)[0].bytes());
    EXPECT_TRUE((*out)[0].download(rt(), got.data(), got.size()).is_ok());
    return got;
  }

  void expect_matches_cpu(int height, int width, uint32_t long_side, size_t offset = 0, size_t pad = 0) {
    SCOPED_TRACE(std::to_string(width) + "x" + std::to_string(height) + " at " + std::to_string(long_side) +
                 ", offset " + std::to_string(offset) + ", row padding " + std::to_string(pad));
    const io::Image img = random_image(height, width, static_cast<uint32_t>(height * 7919 + width));
    auto want = io::prepare_official(img, static_cast<int>(long_side));
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    auto geo = ops::official_geometry(height, width, long_side);
    ASSERT_TRUE(geo.is_ok()) << geo.status().to_string();
    EXPECT_EQ(geo->width, static_cast<uint32_t>(want->image.width));
    EXPECT_EQ(geo->height, static_cast<uint32_t>(want->image.height));
    EXPECT_EQ(geo->crop_x, static_cast<uint32_t>(want->crop_x));
    EXPECT_EQ(geo->crop_y, static_cast<uint32_t>(want->crop_y));
    const std::vector<uint8_t> got = gpu_prepare(img, long_side, offset, img.stride() + pad);
    ASSERT_EQ(got.size(), want->image.pixels.size());
    size_t differing = 0;
    for (size_t i = 0; i < got.size(); ++i) differing += got[i] != want->image.pixels[i];
    EXPECT_EQ(differing, 0u) << "of " << got.size() << " bytes";
  }
};

TEST_F(ResizeOfficial, DownscalingWithLanczosIsBitExact) {
  expect_matches_cpu(1080, 1920, 512);  // the benchmark's HD frame → 512x288
  expect_matches_cpu(480, 640, 512);
  expect_matches_cpu(97, 61, 32);
  expect_matches_cpu(1001, 333, 64);  // portrait, strong shrink (wide kernels)
}

TEST_F(ResizeOfficial, UpscalingWithBicubicIsBitExact) {
  expect_matches_cpu(300, 200, 512);
  expect_matches_cpu(37, 53, 64);
  expect_matches_cpu(20, 17, 64);
}

TEST_F(ResizeOfficial, SquaresAreCroppedToFourByThree) {
  expect_matches_cpu(100, 100, 64);
  expect_matches_cpu(600, 600, 512);
}

TEST_F(ResizeOfficial, ImagesAtModelSizeAreCopiedOrOnlyCropped) {
  expect_matches_cpu(48, 64, 64);  // already official: a plain copy
  expect_matches_cpu(384, 512, 512);
  expect_matches_cpu(50, 64, 64);  // no resize, a 1-row crop top and bottom
}

TEST_F(ResizeOfficial, EitherPassAloneIsBitExact) {
  // 32 * 64 / 65 rounds back to 32: only the long side is resampled.
  expect_matches_cpu(65, 32, 64);  // vertical pass only
  expect_matches_cpu(32, 65, 64);  // horizontal pass only
}

TEST_F(ResizeOfficial, RowStridesAndByteOffsetsAreHonoured) {
  expect_matches_cpu(97, 61, 32, /*offset=*/7, /*pad=*/5);
  expect_matches_cpu(300, 200, 64, 1, 1);
  expect_matches_cpu(65, 32, 64, 3, 2);
  expect_matches_cpu(48, 64, 64, 4093, 256);
}

TEST_F(ResizeOfficial, SourcesLargerThanOneBindingAreSplitIntoBands) {
  ops::set_max_binding_bytes_for_testing(48 << 10);  // the 200x300 source spans ~270 KiB
  expect_matches_cpu(300, 200, 64, 11, 7);
  expect_matches_cpu(400, 130, 64, 0, 0);
  expect_matches_cpu(65, 32, 64, 5, 800);  // vertical-only, straight from a banded source
  ops::set_max_binding_bytes_for_testing(0);
}

TEST_F(ResizeOfficial, MatchesPillowOnTheFixture) {
  auto src = io::load_rgb(std::string(RECON_IO_TEST_DATA) + "/src_571x433.png");
  auto pil = io::load_rgb(std::string(RECON_IO_TEST_DATA) + "/pil_lanczos_512x388.png");
  ASSERT_TRUE(src.is_ok() && pil.is_ok());
  const std::vector<uint8_t> got = gpu_prepare(*src, 512, 0, src->stride());
  // Official crop of the 512x388 Pillow resize: 512x384 from row 2.
  ASSERT_EQ(got.size(), size_t{512} * 384 * 3);
  const size_t row = size_t{512} * 3;
  EXPECT_EQ(0, std::memcmp(got.data(), &pil->pixels[2 * row], got.size()));
}

TEST_F(ResizeOfficial, ReadsAnImportedHostMappingInPlace) {
  if (!rt().caps().external_memory_host) GTEST_SKIP() << "no VK_EXT_external_memory_host";
  const io::Image img = random_image(97, 130, 5);
  const size_t offset = 4096 + 123, stride = img.stride() + 9;
  const std::vector<uint8_t> layout = with_layout(img, offset, stride);
  const size_t bytes = (layout.size() + 4095) / 4096 * 4096;
  void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  std::memcpy(map, layout.data(), layout.size());
  {
    auto import = HostImport::create(rt().context(), map, bytes);
    ASSERT_TRUE(import.is_ok()) << import.status().to_string();
    const ops::RgbImageSource src{(*import)->bytes(), offset, 97, 130, static_cast<uint32_t>(stride)};
    auto want = io::prepare_official(img, 64);
    ASSERT_TRUE(want.is_ok());
    auto out = ops::prepare_official_images(rt(), std::span(&src, 1), 64);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    std::vector<uint8_t> got((*out)[0].bytes());
    ASSERT_TRUE((*out)[0].download(rt(), got.data(), got.size()).is_ok());
    EXPECT_EQ(got, want->image.pixels);

    // The GPU reads the pages as they are now: change them and prepare again.
    std::memset(static_cast<uint8_t*>(map) + offset, 0, img.stride());
    io::Image changed = img;
    std::memset(changed.pixels.data(), 0, img.stride());
    auto want2 = io::prepare_official(changed, 64);
    auto out2 = ops::prepare_official_images(rt(), std::span(&src, 1), 64);
    ASSERT_TRUE(out2.is_ok() && want2.is_ok());
    ASSERT_TRUE((*out2)[0].download(rt(), got.data(), got.size()).is_ok());
    EXPECT_EQ(got, want2->image.pixels);
  }
  ::munmap(map, bytes);
}

TEST_F(ResizeOfficial, SeveralImagesShareOneSubmission) {
  const io::Image a = random_image(90, 120, 1), b = random_image(120, 90, 2);
  auto ta =
      Tensor::from_host(rt(), DType::kU8, {static_cast<int64_t>(a.pixels.size())}, a.pixels.data(), a.pixels.size());
  auto tb =
      Tensor::from_host(rt(), DType::kU8, {static_cast<int64_t>(b.pixels.size())}, b.pixels.data(), b.pixels.size());
  ASSERT_TRUE(ta.is_ok() && tb.is_ok());
  const ops::RgbImageSource sources[] = {{*ta, 0, 90, 120, 360}, {*tb, 0, 120, 90, 270}};
  auto out = ops::prepare_official_images(rt(), sources, 64);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ(out->size(), 2u);
  const io::Image* imgs[] = {&a, &b};
  for (int i = 0; i < 2; ++i) {
    auto want = io::prepare_official(*imgs[i], 64);
    ASSERT_TRUE(want.is_ok());
    std::vector<uint8_t> got((*out)[i].bytes());
    ASSERT_TRUE((*out)[i].download(rt(), got.data(), got.size()).is_ok());
    EXPECT_EQ(got, want->image.pixels) << "image " << i;
  }
}

TEST_F(ResizeOfficial, GeometryAgreesWithTheCpuPreparation) {
  for (uint32_t h : {1u, 16u, 31u, 240u, 481u, 1080u}) {
    for (uint32_t w : {1u, 17u, 64u, 333u, 640u, 1920u}) {
      // MASt3R's crop and DUNE-MASt3R's (14-pixel patches, squares kept).
      for (const auto& [size, crop] :
           {std::pair{32u, CropRule{}}, std::pair{224u, CropRule{}}, std::pair{512u, CropRule{}},
            std::pair{448u, CropRule{14, true}}, std::pair{336u, CropRule{14, true}}}) {
        auto geo = ops::official_geometry(h, w, size, crop);
        if (std::nearbyint(std::min(h, w) * double(size) / std::max(h, w)) == 0) {
          EXPECT_FALSE(geo.is_ok());  // (the CPU preparation does not handle a side that rounds to 0)
          continue;
        }
        io::Image img;
        img.width = static_cast<int>(w);
        img.height = static_cast<int>(h);
        img.pixels.assign(size_t{w} * h * 3, 0);
        auto cpu = io::prepare_official(img, static_cast<int>(size), crop);
        ASSERT_EQ(geo.is_ok(), cpu.is_ok()) << w << "x" << h << " at " << size << " patch " << crop.patch;
        if (!geo.is_ok()) continue;
        EXPECT_EQ(geo->width, static_cast<uint32_t>(cpu->image.width));
        EXPECT_EQ(geo->height, static_cast<uint32_t>(cpu->image.height));
        EXPECT_EQ(geo->resized_width, static_cast<uint32_t>(cpu->resized_width));
        EXPECT_EQ(geo->resized_height, static_cast<uint32_t>(cpu->resized_height));
      }
    }
  }
}

TEST_F(ResizeOfficial, BadInputIsRefusedWithClearErrors) {
  auto bytes = Tensor::empty(rt(), DType::kU8, {4000});
  auto floats = Tensor::empty(rt(), DType::kF32, {1000});
  auto out = Tensor::empty(rt(), DType::kU8, {16, 16, 3});
  ASSERT_TRUE(bytes.is_ok() && floats.is_ok() && out.is_ok());
  auto fails = [&](const ops::RgbImageSource& src, uint32_t size, const Arg& o, const char* needle) {
    Graph g(rt());
    const Status s = ops::official_resize(rt(), g, src, size, o);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
    EXPECT_EQ(g.dispatch_count(), 0u);
  };
  fails({Tensor(), 0, 16, 16, 48}, 16, *out, "defined u8");
  fails({*floats, 0, 16, 16, 48}, 16, *out, "defined u8");
  fails({*bytes, 0, 0, 16, 48}, 16, *out, "outside 1..");
  fails({*bytes, 0, 16, 16, 47}, 16, *out, "stride 47");
  fails({*bytes, 3300, 16, 16, 48}, 16, *out, "of a 4000-byte source");
  fails({*bytes, ~uint64_t{0}, 16, 16, 48}, 16, *out, "of a 4000-byte source");
  fails({*bytes, 0, 16, 16, 48}, 8, *out, "size 8");
  fails({*bytes, 0, 1, 40, 120}, 32, *out, "too small");
  fails({*bytes, 0, 24, 32, 96}, 32, *out, "expected u8 [16,32,3]");  // 32x24 → 32x16
  EXPECT_FALSE(ops::official_geometry(40000, 10, 512).is_ok());
}

}  // namespace
}  // namespace recon::gpu
