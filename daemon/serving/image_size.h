// ImageSize and the size arithmetic of the official MASt3R image preparation: which model-input
// size an image of a given size becomes (tools/io/official_resize.h: long side to L, centre
// crop to multiples of the patch size, 4:3 crop of squares unless the model takes them;
// gpu/official_crop.h), computed without touching pixels so that the
// I/O thread can batch and validate requests before the worker resizes anything.
#pragma once

#include <cstdint>
#include <string>

#include "gpu/official_crop.h"
#include "gpu/status.h"

namespace recon::daemon {

struct ImageSize {
  uint32_t height = 0;
  uint32_t width = 0;
  bool operator==(const ImageSize&) const = default;
  std::string to_string() const { return std::to_string(width) + "x" + std::to_string(height); }
};

// The size prepare_official(image, long_side) returns (same rounding: Python's round-half-even).
// INVALID_ARGUMENT when the image is too small for a 16-pixel patch after the resize.
Result<ImageSize> official_output_size(ImageSize input, uint32_t long_side, const CropRule& crop = {});

// True when prepare_official(image, long_side) would return the image unchanged: the daemon
// then skips the resize (and only copies the pixels out of shared memory).
bool is_official_size(ImageSize input, uint32_t long_side, const CropRule& crop = {});

}  // namespace recon::daemon
