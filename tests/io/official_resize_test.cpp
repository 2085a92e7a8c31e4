// The CPU implementation of the official image preparation against Pillow 9.4 (Debian 12's
// python3-pil): fixtures in tests/io/data were made with Image.resize(..., LANCZOS / BICUBIC).
#include "tools/io/official_resize.h"

#include <gtest/gtest.h>

namespace recon::io {
namespace {

const std::string kData = RECON_IO_TEST_DATA;

void expect_identical(const Image& got, const Image& want) {
  ASSERT_EQ(got.width, want.width);
  ASSERT_EQ(got.height, want.height);
  size_t differing = 0;
  int worst = 0;
  for (size_t i = 0; i < got.pixels.size(); ++i) {
    const int d = std::abs(int(got.pixels[i]) - int(want.pixels[i]));
    differing += d != 0;
    worst = std::max(worst, d);
  }
  EXPECT_EQ(differing, 0u) << "max difference " << worst;
}

TEST(OfficialResize, LanczosDownscaleIsBitExactWithPillow) {
  auto src = load_rgb(kData + "/src_571x433.png");
  auto want = load_rgb(kData + "/pil_lanczos_512x388.png");
  ASSERT_TRUE(src.is_ok() && want.is_ok());
  expect_identical(pil_resize(src.value(), 512, 388, ResampleFilter::kLanczos), want.value());
}

TEST(OfficialResize, BicubicUpscaleIsBitExactWithPillow) {
  auto src = load_rgb(kData + "/src_150x113.png");
  auto want = load_rgb(kData + "/pil_bicubic_512x386.png");
  ASSERT_TRUE(src.is_ok() && want.is_ok());
  expect_identical(pil_resize(src.value(), 512, 386, ResampleFilter::kBicubic), want.value());
}

TEST(OfficialResize, PreparationResizesThenCropsToMultiplesOf16) {
  auto src = load_rgb(kData + "/src_571x433.png");
  ASSERT_TRUE(src.is_ok());
  auto p = prepare_official(src.value(), 512);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->resized_width, 512);
  EXPECT_EQ(p->resized_height, 388);
  EXPECT_EQ(p->image.width, 512);
  EXPECT_EQ(p->image.height, 384);
  EXPECT_EQ(p->crop_x, 0);
  EXPECT_EQ(p->crop_y, 2);  // cy = 194, half height 192
}

TEST(OfficialResize, SquareImagesBecomeFourByThree) {
  Image sq;
  sq.width = sq.height = 600;
  sq.pixels.assign(600 * 600 * 3, 90);
  auto p = prepare_official(sq, 512);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->image.width, 512);
  EXPECT_EQ(p->image.height, 384);
  auto ok = prepare_official(sq, 512, CropRule{16, /*square_ok=*/true});
  EXPECT_EQ(ok->image.height, 512);
}

TEST(OfficialResize, PortraitStaysPortraitAndModelSizedInputIsUnchanged) {
  Image img;
  img.width = 384;
  img.height = 512;
  img.pixels.resize(384 * 512 * 3);
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<uint8_t>(i * 31);
  auto p = prepare_official(img, 512);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->image.width, 384);
  EXPECT_EQ(p->image.height, 512);
  EXPECT_EQ(p->image.pixels, img.pixels);
}

TEST(OfficialResize, TinyImagesAreRefused) {
  Image img;
  img.width = 4;
  img.height = 3;
  img.pixels.assign(36, 0);
  EXPECT_FALSE(prepare_official(img, 8).is_ok());
}

}  // namespace
}  // namespace recon::io
