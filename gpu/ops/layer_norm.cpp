#include "gpu/ops/layer_norm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "gpu/ops/layout.h"
#include "gpu/ops/wide_access.h"
#include "gpu/runtime.h"

namespace recon::gpu::ops {
namespace {

struct LayerNormPush {  // mirrors Push in shaders/layer_norm.comp
  uint32_t rows, cols, flags;
  float eps;
};
static_assert(sizeof(LayerNormPush) == 16);
constexpr uint32_t kHasWeight = 1, kHasBias = 2;

Status check_param(const char* what, const std::optional<Arg>& p, DType dtype, int64_t cols) {
  if (!p) return Status::ok();
  if (p->dtype() != dtype || p->shape() != Shape{cols}) {
    return invalid_argument(std::string("layer_norm: ") + what + " must be " + dtype_name(dtype) + "[" +
                            std::to_string(cols) + "], got " + dtype_name(p->dtype()) + shape_string(p->shape()));
  }
  return Status::ok();
}

}  // namespace

Status layer_norm(Graph& g, const Arg& x, const std::optional<Arg>& weight, const std::optional<Arg>& bias,
                  const Arg& out, float eps) {
  if (x.shape().empty() || x.numel() == 0) return invalid_argument("layer_norm: x is empty or a scalar");
  if (x.shape() != out.shape() || x.dtype() != out.dtype()) {
    return invalid_argument("layer_norm: out " + std::string(dtype_name(out.dtype())) + shape_string(out.shape()) +
                            " differs from x " + dtype_name(x.dtype()) + shape_string(x.shape()));
  }
  if (x.dtype() != DType::kF32 && x.dtype() != DType::kF16) {
    return invalid_argument(std::string("layer_norm: dtype ") + dtype_name(x.dtype()) + " not supported (f32, f16)");
  }
  if (!(eps >= 0.0f) || !std::isfinite(eps)) return invalid_argument("layer_norm: eps must be finite and >= 0");
  const int64_t cols = x.shape().back();
  const int64_t rows = x.numel() / cols;
  RECON_RETURN_IF_ERROR(check_param("weight", weight, x.dtype(), cols));
  RECON_RETURN_IF_ERROR(check_param("bias", bias, x.dtype(), cols));

  const char* shader = x.dtype() == DType::kF32 ? "layer_norm_f32" : "layer_norm_f16";
  const RowSchedule schedule = row_schedule(cols, x.dtype());
  const uint64_t row_bytes = static_cast<uint64_t>(cols) * dtype_size(x.dtype());
  RECON_ASSIGN_OR_RETURN(int64_t chunk, rows_per_dispatch({row_bytes, row_bytes}, rows));
  RECON_ASSIGN_OR_RETURN(Arg x2, reshape_view(x, {rows, cols}));
  RECON_ASSIGN_OR_RETURN(Arg out2, reshape_view(out, {rows, cols}));
  const uint32_t flags = (weight ? kHasWeight : 0) | (bias ? kHasBias : 0);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t r1 = std::min(rows, r0 + chunk);
    RECON_ASSIGN_OR_RETURN(Arg xs, chunk < rows ? row_view(x2, r0, r1) : Result<Arg>(x2));
    RECON_ASSIGN_OR_RETURN(Arg os, chunk < rows ? row_view(out2, r0, r1) : Result<Arg>(out2));
    LayerNormPush push{static_cast<uint32_t>(r1 - r0), static_cast<uint32_t>(cols), flags, eps};
    const uint32_t loop_groups = layer_norm_loop_groups(g.runtime().caps(), schedule, r1 - r0);
    const auto [wg, words, wide] = schedule.spec();
    const std::array<uint32_t, 4> spec = {wg, words, wide, loop_groups > 0 ? 1u : 0u};  // LOOP last
    RECON_RETURN_IF_ERROR(g.dispatch(shader, spec,
                                     {{xs, Access::kRead},
                                      {weight ? *weight : xs, Access::kRead},
                                      {bias ? *bias : xs, Access::kRead},
                                      {os, Access::kWrite}},
                                     push,
                                     Graph::grid_1d(loop_groups > 0 ? loop_groups : static_cast<uint64_t>(r1 - r0))));
  }
  return Status::ok();
}

}  // namespace recon::gpu::ops
