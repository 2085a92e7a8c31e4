// The official image preparation on the GPU: see resize_official.h.
#include "gpu/ops/resize_official.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "gpu/ops/layout.h"
#include "gpu/pillow_coeffs.h"

namespace recon::gpu::ops {
namespace {

// local_size_x of shaders/resize_official.comp, each invocation four pixels of a row: every
// dispatch's row width is the output width, a multiple of 16.
constexpr uint32_t kGroup = 256;
constexpr int kPrecisionBits = kPillowPrecisionBits;

struct ResizePush {
  uint32_t src_base, src_stride, col0, row_shift, coef0, ksize, k_base, rows, cols, dst_base;
};
static_assert(sizeof(ResizePush) == 40, "mirrors Push in shaders/resize_official.comp");

// One axis: per output position (first tap, tap count), then ksize fixed-point weights each —
// the layout the shader reads.
struct AxisCoeffs {
  uint32_t size = 0;  // output positions
  uint32_t ksize = 0;
  std::vector<int32_t> table;
  uint32_t first(uint32_t o) const { return static_cast<uint32_t>(table[2 * o]); }
  uint32_t end(uint32_t o) const { return first(o) + static_cast<uint32_t>(table[2 * o + 1]); }
  uint32_t k_base() const { return 2 * size; }
};

// Pillow's weights (gpu/pillow_coeffs.h) in the shader's layout.
AxisCoeffs resample_coeffs(uint32_t in_size, uint32_t out_size, bool use_lanczos) {
  const PillowCoeffs p = pillow_coeffs(static_cast<int>(in_size), static_cast<int>(out_size),
                                       use_lanczos ? PillowFilter::kLanczos : PillowFilter::kBicubic);
  AxisCoeffs c;
  c.size = out_size;
  c.ksize = static_cast<uint32_t>(p.ksize);
  c.table.reserve(p.bounds.size() + p.k.size());
  c.table.insert(c.table.end(), p.bounds.begin(), p.bounds.end());
  c.table.insert(c.table.end(), p.k.begin(), p.k.end());
  return c;
}

// An axis that is not resized: one tap of weight 1.0, which the integer rounding returns exactly.
AxisCoeffs identity_coeffs(uint32_t size) {
  AxisCoeffs c;
  c.size = size;
  c.ksize = 1;
  c.table.resize(size_t{size} * 3);
  for (uint32_t o = 0; o < size; ++o) {
    c.table[2 * o] = static_cast<int32_t>(o);
    c.table[2 * o + 1] = 1;
    c.table[c.k_base() + o] = 1 << kPrecisionBits;
  }
  return c;
}

// The shader accumulates in int32 where the CPU uses int64: prove no sum of 8-bit values can
// leave the int32 range with these weights.
Status check_int32_sums(const AxisCoeffs& c) {
  for (uint32_t o = 0; o < c.size; ++o) {
    int64_t positive = 0, negative = 0;
    for (uint32_t k = 0; k < c.ksize; ++k) {
      const int64_t v = c.table[c.k_base() + size_t{o} * c.ksize + k];
      (v > 0 ? positive : negative) += v;
    }
    const int64_t bias = int64_t{1} << (kPrecisionBits - 1);
    if (bias + 255 * positive > INT32_MAX || bias + 255 * negative < INT32_MIN) {
      return internal_error("resize coefficients at position " + std::to_string(o) +
                            " could overflow 32-bit accumulation");
    }
  }
  return Status::ok();
}

Result<Tensor> upload_coeffs(Runtime& rt, const AxisCoeffs& c) {
  RECON_RETURN_IF_ERROR(check_int32_sums(c));
  return Tensor::from_host(rt, DType::kI32, {static_cast<int64_t>(c.table.size())}, c.table.data(),
                           c.table.size() * sizeof(int32_t));
}

Status check_source(const RgbImageSource& src) {
  if (!src.bytes.defined() || src.bytes.dtype() != DType::kU8) {
    return invalid_argument("official_resize: the source must be a defined u8 tensor");
  }
  if (src.height == 0 || src.width == 0 || src.height > kMaxOfficialSide || src.width > kMaxOfficialSide) {
    return invalid_argument("official_resize: source " + std::to_string(src.width) + "x" + std::to_string(src.height) +
                            " has a side outside 1.." + std::to_string(kMaxOfficialSide));
  }
  const uint64_t row = uint64_t{src.width} * 3;
  if (src.stride < row) {
    return invalid_argument("official_resize: stride " + std::to_string(src.stride) +
                            " is less than width x 3 = " + std::to_string(row));
  }
  const uint64_t extent = uint64_t{src.height - 1} * src.stride + row;
  const uint64_t available = static_cast<uint64_t>(src.bytes.numel());
  if (src.offset > available || extent > available - src.offset) {
    return invalid_argument("official_resize: the image spans bytes [" + std::to_string(src.offset) + ", " +
                            std::to_string(src.offset + extent) + ") of a " + std::to_string(available) +
                            "-byte source");
  }
  return Status::ok();
}

// One pass over source rows: output rows [0, rows) read source rows [src_first(a), src_end(b))
// for the output band [a, b). Splits into bands whose source bytes fit one binding.
template <typename First, typename End>
Status dispatch_from_source(Graph& g, bool vertical, const RgbImageSource& src, const Arg& coeffs, const Arg& dst,
                            ResizePush push, First src_first, End src_end) {
  const uint64_t row = uint64_t{src.width} * 3;
  const uint64_t room = max_binding_bytes() - kBindingOffsetAlign;
  const uint32_t rows = push.rows;
  uint32_t a = 0;
  while (a < rows) {
    const uint64_t s0 = src_first(a);
    auto span = [&](uint32_t b) { return (src_end(b) - 1 - s0) * uint64_t{src.stride} + row; };
    // The largest band from `a` whose source rows fit (band ends grow monotonically).
    uint32_t lo = a + 1, hi = rows;
    if (span(lo) > room) {
      return invalid_argument("official_resize: one output row needs " + std::to_string(span(lo)) +
                              " source bytes, more than one binding holds");
    }
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo + 1) / 2;
      if (span(mid) <= room) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    const uint32_t b = lo;
    const int64_t begin = static_cast<int64_t>(src.offset + s0 * src.stride);
    RECON_ASSIGN_OR_RETURN(Window w, window(src.bytes, begin, begin + static_cast<int64_t>(span(b))));
    ResizePush band = push;
    band.src_base = w.base;
    band.rows = b - a;
    band.dst_base = push.dst_base + a * push.cols * 3 / 4;
    // Horizontal: output row y of the band is source row s0 + y. Vertical: taps are absolute
    // rows and the binding starts at row s0.
    band.row_shift = static_cast<uint32_t>(s0);
    if (vertical) band.coef0 = push.coef0 + a;
    const uint64_t quads = uint64_t{band.rows} * band.cols / 4;
    RECON_RETURN_IF_ERROR(g.dispatch(vertical ? "resize_official_v" : "resize_official_h", {},
                                     {{w.arg, Access::kRead}, {coeffs, Access::kRead}, {dst, Access::kWrite}}, band,
                                     Graph::grid_1d((quads + kGroup - 1) / kGroup)));
    a = b;
  }
  return Status::ok();
}

}  // namespace

Result<OfficialGeometry> official_geometry(uint32_t height, uint32_t width, uint32_t long_side, const CropRule& crop) {
  if (height == 0 || width == 0 || height > kMaxOfficialSide || width > kMaxOfficialSide) {
    return invalid_argument("official_geometry: " + std::to_string(width) + "x" + std::to_string(height) +
                            " has a side outside 1.." + std::to_string(kMaxOfficialSide));
  }
  if (long_side < 16 || long_side > kMaxOfficialSide) {
    return invalid_argument("official_geometry: size " + std::to_string(long_side) + " is outside 16.." +
                            std::to_string(kMaxOfficialSide));
  }
  OfficialGeometry geo;
  geo.in_height = height;
  geo.in_width = width;
  const uint32_t longest = std::max(height, width);
  // Python's round() is round-half-to-even: std::nearbyint in the default rounding mode.
  geo.resized_width = static_cast<uint32_t>(std::nearbyint(width * static_cast<double>(long_side) / longest));
  geo.resized_height = static_cast<uint32_t>(std::nearbyint(height * static_cast<double>(long_side) / longest));
  geo.lanczos = longest > long_side;
  const uint32_t cx = geo.resized_width / 2, cy = geo.resized_height / 2;
  const auto [halfw, halfh] = official_crop_halves(geo.resized_width, geo.resized_height, crop);
  if (halfw == 0 || halfh == 0) {
    return invalid_argument("a " + std::to_string(width) + "x" + std::to_string(height) + " image is too small for " +
                            std::to_string(crop.patch) + "-pixel patches at " + std::to_string(long_side) + " px");
  }
  geo.crop_x = cx - halfw;
  geo.crop_y = cy - halfh;
  geo.width = 2 * halfw;
  geo.height = 2 * halfh;
  return geo;
}

Status official_resize(Runtime& rt, Graph& g, const RgbImageSource& src, uint32_t long_side, const Arg& out,
                       const CropRule& crop) {
  RECON_RETURN_IF_ERROR(check_source(src));
  RECON_ASSIGN_OR_RETURN(OfficialGeometry geo, official_geometry(src.height, src.width, long_side, crop));
  const Shape want{geo.height, geo.width, 3};
  if (out.dtype() != DType::kU8 || out.shape() != want) {
    return invalid_argument("official_resize: out is " + std::string(dtype_name(out.dtype())) + " " +
                            shape_string(out.shape()) + ", expected u8 " + shape_string(want));
  }
  if (!out.is_slot() && out.tensor().offset() % 4 != 0) {
    return invalid_argument("official_resize: out must start on a 4-byte boundary");
  }
  const bool resize_x = geo.resized_width != src.width, resize_y = geo.resized_height != src.height;
  const AxisCoeffs cx =
      resize_x ? resample_coeffs(src.width, geo.resized_width, geo.lanczos) : identity_coeffs(src.width);
  RECON_ASSIGN_OR_RETURN(Tensor h_coeffs, upload_coeffs(rt, cx));

  ResizePush h{};
  h.src_stride = src.stride;
  h.coef0 = geo.crop_x;
  h.ksize = cx.ksize;
  h.k_base = cx.k_base();
  h.cols = geo.width;
  if (!resize_y) {
    // One horizontal pass (identity taps when x is not resized either), straight into `out`.
    h.rows = geo.height;
    const uint32_t y0 = geo.crop_y;
    return dispatch_from_source(
        g, false, src, h_coeffs, out, h, [&](uint32_t a) { return uint64_t{y0} + a; },
        [&](uint32_t b) { return uint64_t{y0} + b; });
  }

  const AxisCoeffs cy = resample_coeffs(src.height, geo.resized_height, geo.lanczos);
  RECON_ASSIGN_OR_RETURN(Tensor v_coeffs, upload_coeffs(rt, cy));
  // Source rows the kept output rows read (tap ranges move monotonically with the output row).
  const uint32_t r0 = cy.first(geo.crop_y), r1 = cy.end(geo.crop_y + geo.height - 1);
  ResizePush v{};
  v.coef0 = geo.crop_y;
  v.ksize = cy.ksize;
  v.k_base = cy.k_base();
  v.rows = geo.height;
  v.cols = geo.width;
  if (!resize_x) {
    // Vertical only: straight from the source, its columns cropped.
    v.src_stride = src.stride;
    v.col0 = geo.crop_x;
    const uint32_t y0 = geo.crop_y;
    return dispatch_from_source(
        g, true, src, v_coeffs, out, v, [&](uint32_t a) { return uint64_t{cy.first(y0 + a)}; },
        [&](uint32_t b) { return uint64_t{cy.end(y0 + b - 1)}; });
  }
  // Horizontal into a uint8 intermediate of the rows [r0, r1) and the kept columns, as Pillow
  // rounds between the passes; then vertical from it.
  RECON_ASSIGN_OR_RETURN(Tensor tmp, Tensor::empty(rt, DType::kU8, {static_cast<int64_t>(r1 - r0), geo.width, 3}));
  h.rows = r1 - r0;
  RECON_RETURN_IF_ERROR(dispatch_from_source(
      g, false, src, h_coeffs, tmp, h, [&](uint32_t a) { return uint64_t{r0} + a; },
      [&](uint32_t b) { return uint64_t{r0} + b; }));
  v.src_stride = geo.width * 3;
  v.row_shift = r0;
  const uint64_t quads = uint64_t{v.rows} * v.cols / 4;
  return g.dispatch("resize_official_v", {}, {{tmp, Access::kRead}, {v_coeffs, Access::kRead}, {out, Access::kWrite}},
                    v, Graph::grid_1d((quads + kGroup - 1) / kGroup));
}

Result<std::vector<Tensor>> prepare_official_images(Runtime& rt, std::span<const RgbImageSource> images,
                                                    uint32_t long_side, const CropRule& crop) {
  Graph g(rt);
  std::vector<Tensor> outs;
  outs.reserve(images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    const RgbImageSource& src = images[i];
    RECON_ASSIGN_OR_RETURN(OfficialGeometry geo, official_geometry(src.height, src.width, long_side, crop));
    RECON_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(rt, DType::kU8, {geo.height, geo.width, 3}));
    RECON_RETURN_IF_ERROR(
        official_resize(rt, g, src, long_side, out, crop).with_context("preparing image " + std::to_string(i)));
    outs.push_back(std::move(out));
  }
  if (!outs.empty()) RECON_RETURN_IF_ERROR(g.run());
  return outs;
}

}  // namespace recon::gpu::ops
