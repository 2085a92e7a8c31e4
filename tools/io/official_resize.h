// The official MASt3R image preparation (dust3r.utils.image.load_images, spec §2), on the CPU and
// bit-exact with Pillow: long side to `size` with PIL's LANCZOS when shrinking, BICUBIC otherwise
// (Pillow's two-pass, fixed-point 8-bit resampler), then a centre crop to multiples of the patch
// size, and a square crop to 4:3 unless square_ok (gpu/official_crop.h; MASt3R: 16, false).
// tests/io/official_resize_test.cpp compares with Pillow.
#pragma once

#include "gpu/official_crop.h"
#include "tools/io/image_io.h"

namespace recon::io {

enum class ResampleFilter { kBicubic, kLanczos };

// Pillow's Image.resize((out_w, out_h), filter) for 8-bit RGB.
Image pil_resize(const Image& in, int out_w, int out_h, ResampleFilter filter);

struct PreparedImage {
  Image image;  // at model size, sides multiples of the patch size
  int original_width = 0, original_height = 0;
  int resized_width = 0, resized_height = 0;  // before the crop
  int crop_x = 0, crop_y = 0;                 // top-left of the crop in the resized image
};

// `size` is the official loader's size (the long side, 512 for the released model).
Result<PreparedImage> prepare_official(const Image& rgb, int size, const CropRule& crop = {});

}  // namespace recon::io
