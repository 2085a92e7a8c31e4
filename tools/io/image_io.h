// Reading and writing 8-bit images: PNG (libpng) and JPEG (libjpeg), with the EXIF orientation of
// JPEGs applied as the official loader does (PIL's exif_transpose). Used by recon-infer and reconctl.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu/status.h"

namespace recon::io {

// Interleaved 8-bit pixels, row-major, `channels` per pixel (1, 3 or 4).
struct Image {
  int width = 0;
  int height = 0;
  int channels = 3;
  std::vector<uint8_t> pixels;

  size_t stride() const { return static_cast<size_t>(width) * channels; }
};

// Decodes a PNG or JPEG (chosen by content, not by extension) to RGB.
Result<Image> load_rgb(const std::string& path);
Status save_png(const std::string& path, const Image& image);

// Rotates/flips by EXIF orientation 1..8 (as PIL.ImageOps.exif_transpose does).
Image apply_exif_orientation(const Image& image, int orientation);
// The EXIF orientation stored in a JPEG APP1 segment, or 1 when absent or unreadable.
int exif_orientation(const uint8_t* app1, size_t size);

}  // namespace recon::io
