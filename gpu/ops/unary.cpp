#include "gpu/ops/unary.h"

#include <algorithm>
#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;  // local_size_x of shaders/unary.comp

struct UnaryPush {
  uint32_t n;
  float alpha, beta;
  uint32_t base_in, base_out;
  float gamma, delta;
};
static_assert(sizeof(UnaryPush) == 28, "mirrors Push in shaders/unary.comp");

}  // namespace

Status unary(Graph& g, UnaryOp op, const Arg& in, const Arg& out, float alpha, float beta, float gamma, float delta) {
  if (static_cast<uint32_t>(op) > static_cast<uint32_t>(UnaryOp::kShrink)) {
    return invalid_argument("unary: unknown op");
  }
  if (in.dtype() != out.dtype() || in.shape() != out.shape()) {
    return invalid_argument(std::string("unary: in ") + dtype_name(in.dtype()) + shape_string(in.shape()) +
                            " and out " + dtype_name(out.dtype()) + shape_string(out.shape()) + " differ");
  }
  const char* shader = in.dtype() == DType::kF32 ? "unary_f32" : in.dtype() == DType::kF16 ? "unary_f16" : nullptr;
  if (shader == nullptr)
    return invalid_argument(std::string("unary: dtype ") + dtype_name(in.dtype()) + " (f32 or f16 only)");
  const int64_t n = in.numel();
  if (n == 0) return Status::ok();
  RECON_ASSIGN_OR_RETURN(int64_t c, rows_per_window({dtype_size(in.dtype())}, n));
  const uint32_t spec[] = {static_cast<uint32_t>(op)};
  for (int64_t e0 = 0; e0 < n; e0 += c) {
    const int64_t e1 = std::min(n, e0 + c);
    RECON_ASSIGN_OR_RETURN(Window wi, window(in, e0, e1));
    RECON_ASSIGN_OR_RETURN(Window wo, window(out, e0, e1));
    UnaryPush push{static_cast<uint32_t>(e1 - e0), alpha, beta, wi.base, wo.base, gamma, delta};
    RECON_RETURN_IF_ERROR(g.dispatch(shader, spec, {{wi.arg, Access::kRead}, {wo.arg, Access::kWrite}}, push,
                                     Graph::grid_1d((static_cast<uint64_t>(e1 - e0) + kGroup - 1) / kGroup)));
  }
  return Status::ok();
}

}  // namespace recon::gpu::ops
