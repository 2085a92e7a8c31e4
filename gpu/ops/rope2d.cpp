#include "gpu/ops/rope2d.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {
struct Rope2dPush {  // mirrors Push in shaders/rope2d.comp
  uint32_t count, tokens_per_item, grid_w, row_stride, col_offset, heads, quarter;
  float base;
};
static_assert(sizeof(Rope2dPush) == 32);
}  // namespace

Status rope2d(Graph& g, const Arg& x, int64_t col_offset, int64_t heads, int64_t head_dim, const RopeGrid& grid,
              float base) {
  if (x.shape().size() != 3) return invalid_argument("rope2d: x must be [B, N, C], got " + shape_string(x.shape()));
  if (x.dtype() != DType::kF32 && x.dtype() != DType::kF16) {
    return invalid_argument(std::string("rope2d: dtype ") + dtype_name(x.dtype()) + " not supported (f32, f16)");
  }
  const int64_t batch = x.shape()[0], tokens = x.shape()[1], cols = x.shape()[2];
  if (grid.h < 1 || grid.w < 1 || grid.h * grid.w != tokens) {
    return invalid_argument("rope2d: grid " + std::to_string(grid.h) + "x" + std::to_string(grid.w) +
                            " does not hold the " + std::to_string(tokens) + " tokens of x");
  }
  if (head_dim < 4 || head_dim % 4 != 0) {
    return invalid_argument("rope2d: head_dim " + std::to_string(head_dim) + " must be a positive multiple of 4");
  }
  if (heads < 1 || col_offset < 0 || col_offset + heads * head_dim > cols) {
    return invalid_argument("rope2d: columns [" + std::to_string(col_offset) + ", " +
                            std::to_string(col_offset + heads * head_dim) + ") outside the " + std::to_string(cols) +
                            " columns of x");
  }
  if (!(base > 1.0f) || !std::isfinite(base)) return invalid_argument("rope2d: base must be finite and > 1");
  if (batch == 0) return invalid_argument("rope2d: x is empty");

  const char* shader = x.dtype() == DType::kF32 ? "rope2d_f32" : "rope2d_f16";
  const uint64_t item_bytes = static_cast<uint64_t>(tokens * cols) * dtype_size(x.dtype());
  RECON_ASSIGN_OR_RETURN(int64_t chunk, rows_per_dispatch({item_bytes}, batch));
  for (int64_t b0 = 0; b0 < batch; b0 += chunk) {
    const int64_t b1 = std::min(batch, b0 + chunk);
    RECON_ASSIGN_OR_RETURN(Arg xs, chunk < batch ? row_view(x, b0, b1) : Result<Arg>(x));
    const uint64_t count = static_cast<uint64_t>((b1 - b0) * tokens * heads * (head_dim / 4));
    Rope2dPush push{static_cast<uint32_t>(count),        static_cast<uint32_t>(tokens),
                    static_cast<uint32_t>(grid.w),       static_cast<uint32_t>(cols),
                    static_cast<uint32_t>(col_offset),   static_cast<uint32_t>(heads),
                    static_cast<uint32_t>(head_dim / 4), base};
    RECON_RETURN_IF_ERROR(
        g.dispatch(shader, {}, {{xs, Access::kReadWrite}}, push, Graph::grid_1d((count + 255) / 256)));
  }
  return Status::ok();
}

}  // namespace recon::gpu::ops
