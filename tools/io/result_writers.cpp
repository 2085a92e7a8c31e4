#include "tools/io/result_writers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "tools/io/npy.h"

namespace recon::io {

Status write_npy(const std::string& path, std::span<const int64_t> shape, std::span<const float> data) {
  NpyArray array{"<f4", {shape.begin(), shape.end()}, {}};
  array.data.resize(data.size_bytes());
  if (!data.empty()) std::memcpy(array.data.data(), data.data(), data.size_bytes());
  return write_npy_file(path, array);
}

Status write_ply(const std::string& path, std::span<const ColoredPoint> points) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return unavailable("cannot write " + path);
  out << "ply\nformat binary_little_endian 1.0\ncomment made by recon\nelement vertex " << points.size()
      << "\nproperty float x\nproperty float y\nproperty float z\n"
         "property uchar red\nproperty uchar green\nproperty uchar blue\nend_header\n";
  for (const ColoredPoint& p : points) {
    out.write(reinterpret_cast<const char*>(&p.x), 12);
    const uint8_t rgb[3] = {p.r, p.g, p.b};
    out.write(reinterpret_cast<const char*>(rgb), 3);
  }
  if (!out) return unavailable("short write to " + path);
  return Status::ok();
}

namespace {
// A compact approximation of Google's Turbo colormap (polynomial fit), t in [0, 1].
void turbo(double t, uint8_t* rgb) {
  t = std::clamp(t, 0.0, 1.0);
  const double r =
      0.13572138 + t * (4.61539260 + t * (-42.66032258 + t * (132.13108234 + t * (-152.94239396 + t * 59.28637943))));
  const double g =
      0.09140261 + t * (2.19418839 + t * (4.84296658 + t * (-14.18503333 + t * (4.27729857 + t * 2.82956604))));
  const double b =
      0.10667330 + t * (12.64194608 + t * (-60.58204836 + t * (110.36276771 + t * (-89.90310912 + t * 27.34824973))));
  rgb[0] = static_cast<uint8_t>(std::clamp(r, 0.0, 1.0) * 255.0 + 0.5);
  rgb[1] = static_cast<uint8_t>(std::clamp(g, 0.0, 1.0) * 255.0 + 0.5);
  rgb[2] = static_cast<uint8_t>(std::clamp(b, 0.0, 1.0) * 255.0 + 0.5);
}
}  // namespace

Image colorize(std::span<const float> values, int width, int height, bool invert) {
  std::vector<float> finite;
  for (float v : values) {
    if (std::isfinite(v)) finite.push_back(v);
  }
  float lo = 0, hi = 1;
  if (!finite.empty()) {
    auto at = [&](double q) {
      size_t k = static_cast<size_t>(q * (finite.size() - 1));
      std::nth_element(finite.begin(), finite.begin() + static_cast<long>(k), finite.end());
      return finite[k];
    };
    lo = at(0.02);
    hi = at(0.98);
    if (hi <= lo) hi = lo + 1e-6f;
  }
  Image img;
  img.width = width;
  img.height = height;
  img.channels = 3;
  img.pixels.assign(static_cast<size_t>(width) * height * 3, 0);
  for (size_t i = 0; i < values.size() && i < static_cast<size_t>(width) * height; ++i) {
    if (!std::isfinite(values[i])) continue;  // black
    double t = (values[i] - lo) / (hi - lo);
    turbo(invert ? 1.0 - t : t, &img.pixels[i * 3]);
  }
  return img;
}

}  // namespace recon::io
