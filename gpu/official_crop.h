// The crop of the official image loader (dust3r.utils.image.load_images, mast3r-spec.md §2), in one
// place for the CPU preparation (tools/io/official_resize), the GPU one (gpu/ops/resize_official)
// and the daemon's size arithmetic (daemon/serving/image_size): after the resize, a centre crop to
// multiples of the patch size (half-sides ((2·cx) // patch)·patch / 2 around cx = w // 2, likewise
// in y) and, unless square_ok, a square cut to 4:3 (halfh = 3·halfw / 4). MASt3R loads with patch
// 16 and square_ok false; DUNE-MASt3R with patch 14 and square_ok true (naver/mast3r README). The
// 4:3 cut is exact in integers when halfw is a multiple of 4, as it always is for patch 16.
// Header-only, plain C++.
#pragma once

#include <cstdint>

namespace recon {

struct CropRule {
  uint32_t patch = 16;
  bool square_ok = false;
  bool operator==(const CropRule&) const = default;
};

struct CropHalves {
  uint32_t halfw = 0, halfh = 0;  // the crop is [cx − halfw, cx + halfw) × [cy − halfh, cy + halfh)
};

// The crop of a resized w × h image; a zero half means the image is too small for one patch.
inline CropHalves official_crop_halves(uint32_t w, uint32_t h, const CropRule& rule) {
  const uint32_t cx = w / 2, cy = h / 2, p = rule.patch == 0 ? 1 : rule.patch;
  CropHalves c{((2 * cx) / p) * p / 2, ((2 * cy) / p) * p / 2};
  if (!rule.square_ok && w == h) c.halfh = 3 * c.halfw / 4;
  return c;
}

}  // namespace recon
