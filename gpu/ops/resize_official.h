// The official MASt3R image preparation on the GPU, bit-exact with the CPU one
// (tools/io/official_resize.h, itself bit-exact with Pillow): long side to L with Pillow's
// LANCZOS when shrinking and BICUBIC otherwise, then a centre crop to multiples of 16 (squares
// cropped to 4:3). Pillow's 8-bit resampler is integer arithmetic on fixed-point coefficients,
// so the GPU reproduces it exactly: the coefficients are computed here on the CPU in double, as
// Pillow does, and shaders/resize_official.comp accumulates in 32-bit integers (the tables are
// checked to never overflow), horizontal pass first with a uint8 intermediate, then vertical.
// Only what the crop keeps is computed.
//
// Input: uint8 RGB rows anywhere in a uint8 tensor (an imported client region, gpu/host_import.h,
// or a staging upload) at a byte offset with a byte stride. Output: a packed uint8 [H, W, 3]
// tensor — what Mast3rEngine takes. No 8-bit storage feature is needed (bytes move as words).
//
// Large sources: the horizontal pass is split into bands of rows whose bytes fit one binding
// (layout.h windows), so a region of any size works; the intermediate (kept rows × W × 3) and
// the output must each fit one binding (INVALID_ARGUMENT otherwise; never at model sizes).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gpu/graph.h"
#include "gpu/official_crop.h"
#include "gpu/runtime.h"

namespace recon::gpu::ops {

// Larger sides are refused (the daemon accepts at most 16384).
inline constexpr uint32_t kMaxOfficialSide = 32767;

// uint8 RGB rows inside `bytes` (dtype u8, taken flat).
struct RgbImageSource {
  Tensor bytes;
  uint64_t offset = 0;  // byte of the first pixel
  uint32_t height = 0, width = 0;
  uint32_t stride = 0;  // bytes between rows, ≥ width × 3
};

// What prepare_official(image, long_side) does to an image of this size; `crop` is the loader's
// patch size and square rule (gpu/official_crop.h; the default is MASt3R's).
struct OfficialGeometry {
  uint32_t in_height = 0, in_width = 0;
  uint32_t resized_height = 0, resized_width = 0;
  uint32_t crop_y = 0, crop_x = 0;  // top-left of the crop in the resized image
  uint32_t height = 0, width = 0;   // the output, multiples of the patch size
  bool lanczos = false;             // shrinking (else bicubic)
};
// INVALID_ARGUMENT for zero or oversized sides, long_side < 16, or an image too small for a
// 16-pixel patch after the resize.
Result<OfficialGeometry> official_geometry(uint32_t height, uint32_t width, uint32_t long_side,
                                           const CropRule& crop = {});

// Appends the preparation of `src` to `g`, writing `out` (u8 [H, W, 3] of official_geometry's
// size; a tensor's offset must be a multiple of 4). The coefficient tables and the intermediate
// are allocated and uploaded now; the graph's dispatches keep them alive.
Status official_resize(Runtime& rt, Graph& g, const RgbImageSource& src, uint32_t long_side, const Arg& out,
                       const CropRule& crop = {});

// Prepares every image in one submission and waits: packed u8 [H, W, 3] tensors (activations
// pool), in order.
Result<std::vector<Tensor>> prepare_official_images(Runtime& rt, std::span<const RgbImageSource> images,
                                                    uint32_t long_side, const CropRule& crop = {});

}  // namespace recon::gpu::ops
