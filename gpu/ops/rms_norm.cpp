#include "gpu/ops/rms_norm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "gpu/ops/layout.h"
#include "gpu/ops/wide_access.h"

namespace recon::gpu::ops {
namespace {
struct RmsNormPush {  // mirrors Push in shaders/rms_norm.comp
  uint32_t rows, cols, flags;
  float eps;
};
static_assert(sizeof(RmsNormPush) == 16);
constexpr uint32_t kHasWeight = 1;
}  // namespace

Status rms_norm(Graph& g, const Arg& x, const std::optional<Arg>& weight, const Arg& out, float eps) {
  if (x.shape().empty() || x.numel() == 0) return invalid_argument("rms_norm: x is empty or a scalar");
  if (x.shape() != out.shape() || x.dtype() != out.dtype()) {
    return invalid_argument("rms_norm: out " + std::string(dtype_name(out.dtype())) + shape_string(out.shape()) +
                            " differs from x " + dtype_name(x.dtype()) + shape_string(x.shape()));
  }
  if (x.dtype() != DType::kF32 && x.dtype() != DType::kF16) {
    return invalid_argument(std::string("rms_norm: dtype ") + dtype_name(x.dtype()) + " not supported (f32, f16)");
  }
  if (!(eps >= 0.0f) || !std::isfinite(eps)) return invalid_argument("rms_norm: eps must be finite and >= 0");
  const int64_t cols = x.shape().back();
  const int64_t rows = x.numel() / cols;
  if (weight && (weight->dtype() != x.dtype() || weight->shape() != Shape{cols})) {
    return invalid_argument("rms_norm: weight must be " + std::string(dtype_name(x.dtype())) + "[" +
                            std::to_string(cols) + "], got " + dtype_name(weight->dtype()) +
                            shape_string(weight->shape()));
  }

  const char* shader = x.dtype() == DType::kF32 ? "rms_norm_f32" : "rms_norm_f16";
  const std::array<uint32_t, 3> spec = row_schedule(cols, x.dtype()).spec();
  const uint64_t row_bytes = static_cast<uint64_t>(cols) * dtype_size(x.dtype());
  RECON_ASSIGN_OR_RETURN(int64_t chunk, rows_per_dispatch({row_bytes, row_bytes}, rows));
  RECON_ASSIGN_OR_RETURN(Arg x2, reshape_view(x, {rows, cols}));
  RECON_ASSIGN_OR_RETURN(Arg out2, reshape_view(out, {rows, cols}));
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t r1 = std::min(rows, r0 + chunk);
    RECON_ASSIGN_OR_RETURN(Arg xs, chunk < rows ? row_view(x2, r0, r1) : Result<Arg>(x2));
    RECON_ASSIGN_OR_RETURN(Arg os, chunk < rows ? row_view(out2, r0, r1) : Result<Arg>(out2));
    RmsNormPush push{static_cast<uint32_t>(r1 - r0), static_cast<uint32_t>(cols), weight ? kHasWeight : 0u, eps};
    RECON_RETURN_IF_ERROR(
        g.dispatch(shader, spec, {{xs, Access::kRead}, {weight ? *weight : xs, Access::kRead}, {os, Access::kWrite}},
                   push, Graph::grid_1d(static_cast<uint64_t>(r1 - r0))));
  }
  return Status::ok();
}

}  // namespace recon::gpu::ops
