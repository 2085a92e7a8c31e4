#include "tools/io/result_writers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>

namespace recon::io {

Status write_npy(const std::string& path, std::span<const int64_t> shape, std::span<const float> data) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n != static_cast<int64_t>(data.size())) return invalid_argument("npy " + path + ": shape does not match data");
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i)
    dims += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? "," : "");
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + header length (2) + header, padded with spaces to a multiple of 64,
  // ending in a newline (format version 1.0).
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return unavailable("cannot write " + path);
  const char magic[] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(magic, 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  const char len_le[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(len_le, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size_bytes()));
  if (!out) return unavailable("short write to " + path);
  return Status::ok();
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
