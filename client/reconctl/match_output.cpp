// write_matches: .npy per tensor and the side-by-side match picture.
#include "match_output.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "commands.h"
#include "tools/io/result_writers.h"

namespace reconctl {
namespace {

namespace fs = std::filesystem;
using recon::client::DType;
using recon::client::TensorView;

// NumPy format 1.0 for int32 arrays (tools/io writes float32 only): magic, header padded with
// spaces to a multiple of 64 bytes and ending in '\n', then the little-endian elements.
void write_npy_i32(const std::string& path, std::span<const uint64_t> shape, std::span<const int32_t> data) {
  std::string dims;  // "K, 2", or "K," for one axis (a Python tuple)
  for (size_t i = 0; i < shape.size(); ++i) dims += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw LocalFileError("cannot write " + path);
  const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  const auto header_len = static_cast<uint16_t>(header.size());
  const unsigned char len[2] = {static_cast<unsigned char>(header_len & 0xff),
                                static_cast<unsigned char>(header_len >> 8)};
  bool ok = std::fwrite(magic, 1, 8, f) == 8 && std::fwrite(len, 1, 2, f) == 2 &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            std::fwrite(data.data(), sizeof(int32_t), data.size(), f) == data.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) throw LocalFileError("cannot write " + path);
}

void put(recon::io::Image& image, int x, int y, const uint8_t rgb[3]) {
  if (x < 0 || y < 0 || x >= image.width || y >= image.height) return;
  uint8_t* p = &image.pixels[(static_cast<size_t>(y) * image.width + x) * 3];
  p[0] = rgb[0];
  p[1] = rgb[1];
  p[2] = rgb[2];
}

void line(recon::io::Image& image, int x0, int y0, int x1, int y1, const uint8_t rgb[3]) {
  const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
  const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  int err = dx + dy;
  while (true) {
    put(image, x0, y0, rgb);
    if (x0 == x1 && y0 == y1) break;
    const int e2 = 2 * err;
    if (e2 >= dy) {
      err += dy;
      x0 += sx;
    }
    if (e2 <= dx) {
      err += dx;
      y0 += sy;
    }
  }
}

// A bright colour per match index, so that neighbouring lines are told apart.
void colour(size_t k, uint8_t rgb[3]) {
  static const uint8_t palette[][3] = {{230, 25, 75},  {60, 180, 75},  {255, 225, 25}, {0, 130, 200},
                                       {245, 130, 48}, {145, 30, 180}, {70, 240, 240}, {240, 50, 230}};
  const uint8_t* c = palette[k % std::size(palette)];
  std::copy(c, c + 3, rgb);
}

recon::io::Image side_by_side(const recon::io::Image& a, const recon::io::Image& b, std::span<const int32_t> xy_a,
                              std::span<const int32_t> xy_b, size_t count) {
  recon::io::Image out;
  out.width = a.width + b.width;
  out.height = std::max(a.height, b.height);
  out.channels = 3;
  out.pixels.assign(static_cast<size_t>(out.width) * out.height * 3, 0);
  for (int y = 0; y < a.height; ++y) {
    std::copy_n(&a.pixels[static_cast<size_t>(y) * a.width * 3], a.width * 3,
                &out.pixels[static_cast<size_t>(y) * out.width * 3]);
  }
  for (int y = 0; y < b.height; ++y) {
    std::copy_n(&b.pixels[static_cast<size_t>(y) * b.width * 3], b.width * 3,
                &out.pixels[(static_cast<size_t>(y) * out.width + a.width) * 3]);
  }
  const size_t drawn = std::min(count, kMaxDrawnMatches);
  for (size_t i = 0; i < drawn; ++i) {
    const size_t k = drawn == count ? i : i * count / drawn;
    uint8_t rgb[3];
    colour(i, rgb);
    line(out, xy_a[2 * k], xy_a[2 * k + 1], a.width + xy_b[2 * k], xy_b[2 * k + 1], rgb);
  }
  return out;
}

}  // namespace

std::vector<std::string> write_matches(recon::client::Result& matches, const recon::io::Image& first,
                                       const recon::io::Image& second, const std::string& out_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw LocalFileError("cannot create " + out_dir + ": " + ec.message());
  matches.fetch();  // every tensor in one round trip
  std::vector<std::string> files;
  for (const recon::client::TensorInfo& info : matches.tensors()) {
    const TensorView view = matches.tensor(info.name);
    const std::string path = (fs::path(out_dir) / (info.name + ".npy")).string();
    if (view.dtype() == DType::kI32) {
      write_npy_i32(path, view.shape(), view.as<int32_t>());
    } else {
      const std::vector<int64_t> shape(view.shape().begin(), view.shape().end());
      const recon::Status written = recon::io::write_npy(path, shape, view.to_float());
      if (!written.is_ok()) throw LocalFileError("cannot write " + path + ": " + written.message());
    }
    files.push_back(info.name + ".npy");
  }
  if (matches.find("matches_1") != nullptr && matches.find("matches_2") != nullptr) {
    const auto xy_a = matches.tensor("matches_1").as<int32_t>();
    const auto xy_b = matches.tensor("matches_2").as<int32_t>();
    const std::string path = (fs::path(out_dir) / "matches.png").string();
    const recon::Status saved =
        recon::io::save_png(path, side_by_side(first, second, xy_a, xy_b, matches.match_count()));
    if (!saved.is_ok()) throw LocalFileError("cannot write " + path + ": " + saved.message());
    files.push_back("matches.png");
  }
  return files;
}

}  // namespace reconctl
