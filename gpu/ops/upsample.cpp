#include "gpu/ops/upsample.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "gpu/ops/layout.h"
#include "gpu/ops/wide_access.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;  // local_size_x of shaders/upsample.comp

struct UpsamplePush {
  uint32_t planes, in_h, in_w, out_h, out_w, base_in, base_out;
  float inv_scale_h, inv_scale_w;
};
static_assert(sizeof(UpsamplePush) == 36, "mirrors Push in shaders/upsample.comp");

Status run(Graph& g, const Arg& in, const Arg& out, bool align_corners, bool use_scale, float inv_h, float inv_w) {
  const Shape& s = in.shape();
  const Shape& o = out.shape();
  const int64_t planes = s[0] * s[1];
  if (planes == 0 || o[2] == 0 || o[3] == 0) return Status::ok();
  const char* shader = in.dtype() == DType::kF32 ? "upsample_f32" : "upsample_f16";
  const int64_t in_plane = s[2] * s[3], out_plane = o[2] * o[3];
  const uint64_t es = dtype_size(in.dtype());
  RECON_ASSIGN_OR_RETURN(int64_t c, rows_per_window({in_plane * es, out_plane * es}, planes));
  const uint32_t vw = elements_per_word(in.dtype());
  for (int64_t p0 = 0; p0 < planes; p0 += c) {
    const int64_t p1 = std::min(planes, p0 + c);
    RECON_ASSIGN_OR_RETURN(Window wi, window(in, p0 * in_plane, p1 * in_plane));
    RECON_ASSIGN_OR_RETURN(Window wo, window(out, p0 * out_plane, p1 * out_plane));
    const int64_t n = (p1 - p0) * out_plane;
    if (n > int64_t{0xffffffff}) return invalid_argument("upsample: more than 2^32 outputs in one dispatch");
    UpsamplePush push{static_cast<uint32_t>(p1 - p0),
                      static_cast<uint32_t>(s[2]),
                      static_cast<uint32_t>(s[3]),
                      static_cast<uint32_t>(o[2]),
                      static_cast<uint32_t>(o[3]),
                      wi.base,
                      wo.base,
                      inv_h,
                      inv_w};
    // Whole 16-byte words of output rows: VW outputs per step over a looping grid.
    const bool words = o[3] % vw == 0 && wo.base % vw == 0;
    const uint32_t spec[] = {align_corners ? 1u : 0u, use_scale ? 1u : 0u, words ? 1u : 0u};
    const std::array<uint32_t, 3> grid = words ? std::array<uint32_t, 3>{grid_stride_groups(n / vw), 1, 1}
                                               : Graph::grid_1d((static_cast<uint64_t>(n) + kGroup - 1) / kGroup);
    RECON_RETURN_IF_ERROR(g.dispatch(shader, spec, {{wi.arg, Access::kRead}, {wo.arg, Access::kWrite}}, push, grid));
  }
  return Status::ok();
}

Status check(const char* name, const Arg& in, const Arg& out) {
  const Shape& s = in.shape();
  const Shape& o = out.shape();
  if (s.size() != 4 || o.size() != 4 || s[0] != o[0] || s[1] != o[1]) {
    return invalid_argument(std::string(name) + ": in " + shape_string(s) + " and out " + shape_string(o) +
                            " must be [B, C, H, W] with equal B and C");
  }
  if (in.dtype() != out.dtype() || (in.dtype() != DType::kF32 && in.dtype() != DType::kF16)) {
    return invalid_argument(std::string(name) + ": dtypes " + dtype_name(in.dtype()) + " -> " +
                            dtype_name(out.dtype()) + " (f32 or f16, equal)");
  }
  for (int d = 2; d < 4; ++d) {
    if (s[d] > kMaxResampleExtent || o[d] > kMaxResampleExtent) {
      return invalid_argument(std::string(name) + ": spatial sizes above 32767 are not supported");
    }
    if (s[d] == 0 && o[d] != 0) return invalid_argument(std::string(name) + ": cannot resample an empty map");
  }
  return Status::ok();
}

}  // namespace

Status upsample_bilinear(Graph& g, const Arg& in, const Arg& out, bool align_corners) {
  RECON_RETURN_IF_ERROR(check("upsample_bilinear", in, out));
  return run(g, in, out, align_corners, false, 0.0f, 0.0f);
}

Status upsample_bilinear_scale(Graph& g, const Arg& in, const Arg& out, double scale_h, double scale_w,
                               bool align_corners) {
  RECON_RETURN_IF_ERROR(check("upsample_bilinear_scale", in, out));
  if (!(scale_h > 0) || !(scale_w > 0) || !std::isfinite(scale_h) || !std::isfinite(scale_w)) {
    return invalid_argument("upsample_bilinear_scale: scale factors must be positive and finite");
  }
  const Shape& s = in.shape();
  const int64_t want_h = static_cast<int64_t>(std::floor(static_cast<double>(s[2]) * scale_h));
  const int64_t want_w = static_cast<int64_t>(std::floor(static_cast<double>(s[3]) * scale_w));
  if (out.shape()[2] != want_h || out.shape()[3] != want_w) {
    return invalid_argument("upsample_bilinear_scale: " + shape_string(s) + " scaled by (" + std::to_string(scale_h) +
                            ", " + std::to_string(scale_w) + ") is " + std::to_string(want_h) + "x" +
                            std::to_string(want_w) + ", out is " + shape_string(out.shape()));
  }
  // PyTorch: area_pixel_compute_scale = 1/scale (computed in double, used as float).
  return run(g, in, out, align_corners, !align_corners, static_cast<float>(1.0 / scale_h),
             static_cast<float>(1.0 / scale_w));
}

}  // namespace recon::gpu::ops
