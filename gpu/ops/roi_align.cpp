#include "gpu/ops/roi_align.h"

#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kRoiAlignGroup = 256;  // local_size_x of shaders/roi_align.comp

struct RoiAlignPush {
  uint32_t n, channels, height, width, out_height, out_width, batch;
  int32_t sampling_ratio;
  float spatial_scale;
  uint32_t half_pixel, max;
};
static_assert(sizeof(RoiAlignPush) == 44, "mirrors Push in shaders/roi_align.comp");

Status check_roi_align(const Arg& x, const Arg& rois, const Arg& batch_indices, const Arg& out) {
  const Shape& xs = x.shape();
  const Shape& rs = rois.shape();
  const bool shapes_ok = xs.size() == 4 && rs.size() == 2 && rs[1] == 4 && batch_indices.shape() == Shape{rs[0]} &&
                         out.shape().size() == 4 && out.shape()[0] == rs[0] && out.shape()[1] == xs[1];
  if (!shapes_ok) {
    return invalid_argument("roi_align: x " + shape_string(xs) + ", rois " + shape_string(rs) + ", batch_indices " +
                            shape_string(batch_indices.shape()) + " and out " + shape_string(out.shape()) +
                            " (x [N, C, H, W], rois [R, 4], batch_indices [R], out [R, C, Ho, Wo])");
  }
  const bool float_ok = x.dtype() == DType::kF32 || x.dtype() == DType::kF16;
  if (!float_ok || rois.dtype() != x.dtype() || out.dtype() != x.dtype() || batch_indices.dtype() != DType::kI32) {
    return invalid_argument(std::string("roi_align: dtypes ") + dtype_name(x.dtype()) + ", " +
                            dtype_name(rois.dtype()) + ", " + dtype_name(batch_indices.dtype()) + " -> " +
                            dtype_name(out.dtype()) + " (x, rois and out f32 or f16, batch_indices i32)");
  }
  for (const Arg* a : {&x, &rois, &batch_indices, &out}) {
    if (a->bytes() > max_binding_bytes() || a->numel() > INT32_MAX) {
      return invalid_argument("roi_align: every operand must fit one binding");
    }
  }
  return Status::ok();
}

}  // namespace

Status roi_align(Graph& g, const Arg& x, const Arg& rois, const Arg& batch_indices, const Arg& out,
                 const RoiAlignParams& params) {
  RECON_RETURN_IF_ERROR(check_roi_align(x, rois, batch_indices, out));
  if (params.sampling_ratio < 0 || params.sampling_ratio > INT32_MAX) {
    return invalid_argument("roi_align: sampling_ratio " + std::to_string(params.sampling_ratio) + " below 0");
  }
  if (out.numel() == 0) return Status::ok();
  const Shape& xs = x.shape();
  RoiAlignPush push{};
  push.n = static_cast<uint32_t>(out.numel());
  push.channels = static_cast<uint32_t>(xs[1]);
  push.height = static_cast<uint32_t>(xs[2]);
  push.width = static_cast<uint32_t>(xs[3]);
  push.out_height = static_cast<uint32_t>(out.shape()[2]);
  push.out_width = static_cast<uint32_t>(out.shape()[3]);
  push.batch = static_cast<uint32_t>(xs[0]);
  push.sampling_ratio = static_cast<int32_t>(params.sampling_ratio);
  push.spatial_scale = params.spatial_scale;
  push.half_pixel = params.half_pixel ? 1 : 0;
  push.max = params.max ? 1 : 0;
  return g.dispatch(x.dtype() == DType::kF32 ? "roi_align_f32" : "roi_align_f16", {},
                    {{x, Access::kRead}, {rois, Access::kRead}, {batch_indices, Access::kRead}, {out, Access::kWrite}},
                    push, Graph::grid_1d((static_cast<uint64_t>(push.n) + kRoiAlignGroup - 1) / kRoiAlignGroup));
}

}  // namespace recon::gpu::ops
