// Writers for what a reconstruction produces, in formats people open directly: NumPy .npy arrays
// (fp32, C order), a coloured point cloud as binary little-endian PLY, and PNG previews of depth
// and confidence maps. Shared by recon-infer and reconctl.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpu/status.h"
#include "tools/io/image_io.h"

namespace recon::io {

Status write_npy(const std::string& path, std::span<const int64_t> shape, std::span<const float> data);

struct ColoredPoint {
  float x, y, z;
  uint8_t r, g, b;
};
Status write_ply(const std::string& path, std::span<const ColoredPoint> points);

// A colour-mapped preview (turbo-like) of a scalar map, scaled between its 2nd and 98th percentiles
// of finite values. `invert` maps small values to warm colours (near depth = warm).
Image colorize(std::span<const float> values, int width, int height, bool invert);

}  // namespace recon::io
