#include "gpu/ops/grid_sample.h"

#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGridSampleGroup = 256;  // local_size_x of shaders/grid_sample.comp

struct GridSamplePush {
  uint32_t n, channels, height, width, out_height, out_width;
};
static_assert(sizeof(GridSamplePush) == 24, "mirrors Push in shaders/grid_sample.comp");

}  // namespace

Status grid_sample(Graph& g, const Arg& x, const Arg& grid, const Arg& out, GridSampleMode mode,
                   GridSamplePadding padding, bool align_corners) {
  const Shape& xs = x.shape();
  const Shape& gs = grid.shape();
  const bool shapes_ok = xs.size() == 4 && gs.size() == 4 && gs[0] == xs[0] && gs[3] == 2 &&
                         out.shape() == Shape{xs[0], xs[1], gs[1], gs[2]};
  if (!shapes_ok) {
    return invalid_argument("grid_sample: x " + shape_string(xs) + ", grid " + shape_string(gs) + " and out " +
                            shape_string(out.shape()) + " (x [N, C, H, W], grid [N, Ho, Wo, 2], out [N, C, Ho, Wo])");
  }
  if (x.dtype() != grid.dtype() || x.dtype() != out.dtype() || (x.dtype() != DType::kF32 && x.dtype() != DType::kF16)) {
    return invalid_argument(std::string("grid_sample: dtypes ") + dtype_name(x.dtype()) + ", " +
                            dtype_name(grid.dtype()) + " -> " + dtype_name(out.dtype()) + " (one of f32 or f16)");
  }
  if (static_cast<uint32_t>(mode) > static_cast<uint32_t>(GridSampleMode::kBicubic) ||
      static_cast<uint32_t>(padding) > static_cast<uint32_t>(GridSamplePadding::kReflection)) {
    return invalid_argument("grid_sample: unknown mode or padding");
  }
  if (out.numel() == 0) return Status::ok();
  if (xs[2] == 0 || xs[3] == 0) return invalid_argument("grid_sample: an empty image");
  for (const Arg* a : {&x, &grid, &out}) {
    if (a->bytes() > max_binding_bytes() || a->numel() > INT32_MAX) {
      return invalid_argument("grid_sample: x, grid and out must each fit one binding");
    }
  }
  GridSamplePush push{};
  push.n = static_cast<uint32_t>(out.numel());
  push.channels = static_cast<uint32_t>(xs[1]);
  push.height = static_cast<uint32_t>(xs[2]);
  push.width = static_cast<uint32_t>(xs[3]);
  push.out_height = static_cast<uint32_t>(gs[1]);
  push.out_width = static_cast<uint32_t>(gs[2]);
  const uint32_t spec[] = {static_cast<uint32_t>(mode), static_cast<uint32_t>(padding), align_corners ? 1u : 0u};
  return g.dispatch(x.dtype() == DType::kF32 ? "grid_sample_f32" : "grid_sample_f16", spec,
                    {{x, Access::kRead}, {grid, Access::kRead}, {out, Access::kWrite}}, push,
                    Graph::grid_1d((static_cast<uint64_t>(push.n) + kGridSampleGroup - 1) / kGridSampleGroup));
}

}  // namespace recon::gpu::ops
