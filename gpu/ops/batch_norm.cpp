#include "gpu/ops/batch_norm.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

struct BatchNormPush {  // mirrors Push in shaders/batch_norm.comp
  uint32_t n, channels, spatial, flags;
  float eps;
};
static_assert(sizeof(BatchNormPush) == 20);
constexpr uint32_t kHasWeight = 1, kHasBias = 2;

Status check_param(const char* what, const Arg& p, DType dtype, int64_t channels) {
  if (p.dtype() != dtype || p.shape() != Shape{channels}) {
    return invalid_argument(std::string("batch_norm: ") + what + " must be " + dtype_name(dtype) + "[" +
                            std::to_string(channels) + "], got " + dtype_name(p.dtype()) + shape_string(p.shape()));
  }
  return Status::ok();
}

}  // namespace

Status batch_norm(Graph& g, const Arg& x, const Arg& mean, const Arg& var, const std::optional<Arg>& weight,
                  const std::optional<Arg>& bias, const Arg& out, float eps) {
  if (x.shape().size() < 2 || x.numel() == 0) return invalid_argument("batch_norm: x must be [N, C, ...], non-empty");
  if (x.shape() != out.shape() || x.dtype() != out.dtype()) {
    return invalid_argument("batch_norm: out " + std::string(dtype_name(out.dtype())) + shape_string(out.shape()) +
                            " differs from x " + dtype_name(x.dtype()) + shape_string(x.shape()));
  }
  if (x.dtype() != DType::kF32 && x.dtype() != DType::kF16) {
    return invalid_argument(std::string("batch_norm: dtype ") + dtype_name(x.dtype()) + " not supported (f32, f16)");
  }
  if (!(eps >= 0.0f) || !std::isfinite(eps)) return invalid_argument("batch_norm: eps must be finite and >= 0");
  const int64_t batch = x.shape()[0], channels = x.shape()[1];
  const int64_t spatial = x.numel() / (batch * channels);
  RECON_RETURN_IF_ERROR(check_param("mean", mean, x.dtype(), channels));
  RECON_RETURN_IF_ERROR(check_param("var", var, x.dtype(), channels));
  if (weight) RECON_RETURN_IF_ERROR(check_param("weight", *weight, x.dtype(), channels));
  if (bias) RECON_RETURN_IF_ERROR(check_param("bias", *bias, x.dtype(), channels));

  const char* shader = x.dtype() == DType::kF32 ? "batch_norm_f32" : "batch_norm_f16";
  const uint64_t image_bytes = static_cast<uint64_t>(channels * spatial) * dtype_size(x.dtype());
  RECON_ASSIGN_OR_RETURN(int64_t chunk, rows_per_dispatch({image_bytes, image_bytes}, batch));
  const uint32_t flags = (weight ? kHasWeight : 0) | (bias ? kHasBias : 0);
  for (int64_t b0 = 0; b0 < batch; b0 += chunk) {
    const int64_t b1 = std::min(batch, b0 + chunk);
    RECON_ASSIGN_OR_RETURN(Arg xs, chunk < batch ? row_view(x, b0, b1) : Result<Arg>(x));
    RECON_ASSIGN_OR_RETURN(Arg os, chunk < batch ? row_view(out, b0, b1) : Result<Arg>(out));
    const uint64_t n = static_cast<uint64_t>((b1 - b0) * channels * spatial);
    BatchNormPush push{static_cast<uint32_t>(n), static_cast<uint32_t>(channels), static_cast<uint32_t>(spatial), flags,
                       eps};
    RECON_RETURN_IF_ERROR(g.dispatch(shader, {},
                                     {{xs, Access::kRead},
                                      {mean, Access::kRead},
                                      {var, Access::kRead},
                                      {weight ? *weight : xs, Access::kRead},
                                      {bias ? *bias : xs, Access::kRead},
                                      {os, Access::kWrite}},
                                     push, Graph::grid_1d((n + 255) / 256)));
  }
  return Status::ok();
}

}  // namespace recon::gpu::ops
