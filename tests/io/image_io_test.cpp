#include "tools/io/image_io.h"

#include <gtest/gtest.h>
#include <jpeglib.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tools/io/result_writers.h"

namespace recon::io {
namespace {

namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("recon-io-" + std::to_string(::getpid()) + "-" + name);
}

Image gradient(int w, int h) {
  Image img;
  img.width = w;
  img.height = h;
  img.pixels.resize(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &img.pixels[(static_cast<size_t>(y) * w + x) * 3];
      p[0] = static_cast<uint8_t>(x * 3);
      p[1] = static_cast<uint8_t>(y * 5);
      p[2] = static_cast<uint8_t>(x + y);
    }
  return img;
}

TEST(ImageIo, PngRoundTripsExactly) {
  Image img = gradient(37, 23);
  auto path = temp_path("a.png");
  ASSERT_TRUE(save_png(path, img).is_ok());
  auto back = load_rgb(path);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->width, 37);
  EXPECT_EQ(back->height, 23);
  EXPECT_EQ(back->pixels, img.pixels);
  fs::remove(path);
}

TEST(ImageIo, JpegDecodesCloseToTheSource) {
  Image img = gradient(64, 48);
  auto path = temp_path("b.jpg");
  {
    jpeg_compress_struct c;
    jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    jpeg_stdio_dest(&c, f);
    c.image_width = 64;
    c.image_height = 48;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 98, TRUE);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
      JSAMPROW row = &img.pixels[c.next_scanline * img.stride()];
      jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    std::fclose(f);
  }
  auto back = load_rgb(path);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  ASSERT_EQ(back->width, 64);
  double mean_abs = 0;
  for (size_t i = 0; i < img.pixels.size(); ++i) mean_abs += std::abs(int(back->pixels[i]) - int(img.pixels[i]));
  EXPECT_LT(mean_abs / img.pixels.size(), 4.0);
  fs::remove(path);
}

TEST(ImageIo, GarbageMissingAndTruncatedFilesAreClearErrors) {
  EXPECT_EQ(load_rgb("/nonexistent/x.png").status().code(), StatusCode::kNotFound);
  auto path = temp_path("c.png");
  { std::ofstream(path) << "not an image"; }
  EXPECT_EQ(load_rgb(path).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(save_png(path, gradient(20, 20)).is_ok());
  fs::resize_file(path, 60);
  EXPECT_EQ(load_rgb(path).status().code(), StatusCode::kInvalidArgument);
  fs::remove(path);
}

TEST(ImageIo, ReadsExifOrientationFromBothByteOrders) {
  // "Exif\0\0" + TIFF header + IFD0 with one entry: tag 0x0112 (SHORT, 1) = 6.
  const uint8_t le[] = {'E',  'x',  'i', 'f', 0, 0, 'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0,
                        0x12, 0x01, 3,   0,   1, 0, 0,   0,   6,  0, 0, 0, 0, 0, 0, 0};
  const uint8_t be[] = {'E',  'x',  'i', 'f', 0, 0, 'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1,
                        0x01, 0x12, 0,   3,   0, 0, 0,   1,   0, 8,  0, 0, 0, 0, 0, 0};
  EXPECT_EQ(exif_orientation(le, sizeof(le)), 6);
  EXPECT_EQ(exif_orientation(be, sizeof(be)), 8);
  EXPECT_EQ(exif_orientation(le, 10), 1) << "truncated data falls back to 1";
}

TEST(ImageIo, ExifRotationsMatchTheirDefinitions) {
  Image img = gradient(3, 2);
  auto px = [](const Image& i, int x, int y) { return i.pixels[(static_cast<size_t>(y) * i.width + x) * 3]; };
  Image r6 = apply_exif_orientation(img, 6);  // rotate 90° clockwise
  ASSERT_EQ(r6.width, 2);
  ASSERT_EQ(r6.height, 3);
  EXPECT_EQ(px(r6, 0, 0), px(img, 0, 1));  // bottom-left goes to top-left
  EXPECT_EQ(px(r6, 1, 0), px(img, 0, 0));
  Image r3 = apply_exif_orientation(img, 3);
  EXPECT_EQ(px(r3, 0, 0), px(img, 2, 1));
  Image r8 = apply_exif_orientation(img, 8);  // rotate 90° counter-clockwise
  EXPECT_EQ(px(r8, 0, 0), px(img, 2, 0));
}

TEST(ResultWriters, NpyHeaderIsAlignedAndDescribesTheArray) {
  auto path = temp_path("x.npy");
  const int64_t shape[] = {2, 3};
  const float data[] = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(write_npy(path, shape, data).is_ok());
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(1, 5), "NUMPY");
  const size_t header_len = static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8;
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_NE(bytes.find("'shape': (2,3)"), std::string::npos);
  EXPECT_EQ(bytes.size(), 10 + header_len + sizeof(data));
  const int64_t bad[] = {4};
  EXPECT_FALSE(write_npy(path, bad, data).is_ok());
  fs::remove(path);
}

TEST(ResultWriters, PlyHasOneVertexRecordPerPoint) {
  auto path = temp_path("p.ply");
  std::vector<ColoredPoint> pts = {{1, 2, 3, 255, 0, 0}, {4, 5, 6, 0, 255, 0}};
  ASSERT_TRUE(write_ply(path, pts).is_ok());
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto end = bytes.find("end_header\n");
  ASSERT_NE(end, std::string::npos);
  EXPECT_NE(bytes.find("element vertex 2"), std::string::npos);
  EXPECT_EQ(bytes.size() - (end + 11), 2u * 15);
  fs::remove(path);
}

TEST(ResultWriters, ColorizeSpansTheColormapAndBlacksOutNonFinite) {
  std::vector<float> v(100);
  for (int i = 0; i < 100; ++i) v[i] = static_cast<float>(i);
  v[50] = NAN;
  Image img = colorize(v, 10, 10, false);
  EXPECT_EQ(img.pixels[150], 0);
  EXPECT_EQ(img.pixels[151], 0);
  EXPECT_NE(img.pixels[0 * 3 + 2], img.pixels[99 * 3 + 2]) << "low and high values get different colours";
}

}  // namespace
}  // namespace recon::io
