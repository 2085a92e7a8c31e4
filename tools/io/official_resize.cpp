#include "tools/io/official_resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "gpu/pillow_coeffs.h"

namespace recon::io {
namespace {

constexpr int kPrecisionBits = kPillowPrecisionBits;

PillowCoeffs precompute(int in_size, int out_size, ResampleFilter f) {
  return pillow_coeffs(in_size, out_size,
                       f == ResampleFilter::kLanczos ? PillowFilter::kLanczos : PillowFilter::kBicubic);
}

uint8_t clip8(int64_t v) {
  v >>= kPrecisionBits;
  return static_cast<uint8_t>(std::clamp<int64_t>(v, 0, 255));
}

}  // namespace

Image pil_resize(const Image& in, int out_w, int out_h, ResampleFilter filter) {
  if (out_w == in.width && out_h == in.height) return in;  // Pillow returns a copy
  const int ch = in.channels;
  const bool need_h = out_w != in.width, need_v = out_h != in.height;
  PillowCoeffs cv = precompute(in.height, out_h, filter);
  const int y_first = cv.bounds[0];
  const int y_last = cv.bounds[out_h * 2 - 2] + cv.bounds[out_h * 2 - 1];

  Image cur = in;
  if (need_h) {
    PillowCoeffs chz = precompute(in.width, out_w, filter);
    for (int i = 0; i < out_h; ++i) cv.bounds[i * 2] -= y_first;
    Image tmp;
    tmp.width = out_w;
    tmp.height = y_last - y_first;
    tmp.channels = ch;
    tmp.pixels.resize(static_cast<size_t>(tmp.width) * tmp.height * ch);
    for (int y = 0; y < tmp.height; ++y) {
      const uint8_t* row = &in.pixels[static_cast<size_t>(y + y_first) * in.stride()];
      for (int xx = 0; xx < out_w; ++xx) {
        const int xmin = chz.bounds[xx * 2], xmax = chz.bounds[xx * 2 + 1];
        const int32_t* k = &chz.k[static_cast<size_t>(xx) * chz.ksize];
        for (int c = 0; c < ch; ++c) {
          int64_t ss = int64_t{1} << (kPrecisionBits - 1);
          for (int x = 0; x < xmax; ++x) ss += int64_t{row[(x + xmin) * ch + c]} * k[x];
          tmp.pixels[(static_cast<size_t>(y) * out_w + xx) * ch + c] = clip8(ss);
        }
      }
    }
    cur = std::move(tmp);
  }
  if (!need_v) return cur;
  Image out;
  out.width = cur.width;
  out.height = out_h;
  out.channels = ch;
  out.pixels.resize(static_cast<size_t>(out.width) * out_h * ch);
  for (int yy = 0; yy < out_h; ++yy) {
    const int ymin = cv.bounds[yy * 2], ymax = cv.bounds[yy * 2 + 1];
    const int32_t* k = &cv.k[static_cast<size_t>(yy) * cv.ksize];
    for (int x = 0; x < cur.width; ++x) {
      for (int c = 0; c < ch; ++c) {
        int64_t ss = int64_t{1} << (kPrecisionBits - 1);
        for (int y = 0; y < ymax; ++y)
          ss += int64_t{cur.pixels[(static_cast<size_t>(y + ymin) * cur.width + x) * ch + c]} * k[y];
        out.pixels[(static_cast<size_t>(yy) * out.width + x) * ch + c] = clip8(ss);
      }
    }
  }
  return out;
}

Result<PreparedImage> prepare_official(const Image& rgb, int size, const CropRule& crop) {
  if (rgb.channels != 3 || rgb.width <= 0 || rgb.height <= 0) return invalid_argument("expected an RGB image");
  if (size < 16) return invalid_argument("size must be at least 16");
  PreparedImage p;
  p.original_width = rgb.width;
  p.original_height = rgb.height;
  const int long_side = std::max(rgb.width, rgb.height);
  // Python's round() is round-half-to-even, which std::nearbyint does in the default mode.
  const int w = static_cast<int>(std::nearbyint(rgb.width * static_cast<double>(size) / long_side));
  const int h = static_cast<int>(std::nearbyint(rgb.height * static_cast<double>(size) / long_side));
  const ResampleFilter filter = long_side > size ? ResampleFilter::kLanczos : ResampleFilter::kBicubic;
  Image resized = pil_resize(rgb, w, h, filter);
  p.resized_width = w;
  p.resized_height = h;
  const int cx = w / 2, cy = h / 2;
  const CropHalves halves = official_crop_halves(static_cast<uint32_t>(w), static_cast<uint32_t>(h), crop);
  const int halfw = static_cast<int>(halves.halfw), halfh = static_cast<int>(halves.halfh);
  if (halfw == 0 || halfh == 0) {
    return invalid_argument("image too small for the model's " + std::to_string(crop.patch) + "-pixel patches");
  }
  p.crop_x = cx - halfw;
  p.crop_y = cy - halfh;
  Image& out = p.image;
  out.width = 2 * halfw;
  out.height = 2 * halfh;
  out.channels = 3;
  out.pixels.resize(static_cast<size_t>(out.width) * out.height * 3);
  for (int y = 0; y < out.height; ++y) {
    std::memcpy(&out.pixels[static_cast<size_t>(y) * out.stride()],
                &resized.pixels[(static_cast<size_t>(y + p.crop_y) * w + p.crop_x) * 3], out.stride());
  }
  return p;
}

}  // namespace recon::io
