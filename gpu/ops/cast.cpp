#include "gpu/ops/cast.h"

#include "gpu/ops/elementwise_basic.h"

namespace recon::gpu::ops {
namespace {
struct CastPush {
  uint32_t n;
};
static_assert(sizeof(CastPush) == 4, "mirrors Push in shaders/cast.comp");
}  // namespace

Status cast(Graph& g, const Arg& in, const Arg& out) {
  if (in.shape() != out.shape()) {
    return invalid_argument("cast: shapes differ: " + shape_string(in.shape()) + " -> " + shape_string(out.shape()));
  }
  if (in.dtype() == out.dtype()) return copy(g, in, out);
  const char* shader = nullptr;
  if (in.dtype() == DType::kF32 && out.dtype() == DType::kF16) shader = "cast_f32_f16";
  if (in.dtype() == DType::kF16 && out.dtype() == DType::kF32) shader = "cast_f16_f32";
  if (shader == nullptr) return invalid_argument("cast: only f32 <-> f16");
  if (in.numel() > int64_t{0xffffffff}) return invalid_argument("cast: tensor too large");
  CastPush push{static_cast<uint32_t>(in.numel())};
  return g.dispatch(shader, {}, {{in, Access::kRead}, {out, Access::kWrite}}, push,
                    Graph::grid_1d((push.n + 255) / 256));
}

}  // namespace recon::gpu::ops
