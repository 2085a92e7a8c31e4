#include "gpu/ops/matmul_tiled.h"

#include <string>

namespace recon::gpu::ops {
namespace {
struct MatmulPush {
  uint32_t m, n, k, lda, ldb, ldc;
};
static_assert(sizeof(MatmulPush) == 24, "mirrors Push in shaders/matmul_tiled.comp");
}  // namespace

Status matmul_tiled(Graph& g, const Arg& a, const Arg& b, const Arg& c, uint32_t tile) {
  if (a.shape().size() != 2 || b.shape().size() != 2 || c.shape().size() != 2) {
    return invalid_argument("matmul: operands must be 2-D");
  }
  const int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  if (b.shape()[0] != k || c.shape()[0] != m || c.shape()[1] != n) {
    return invalid_argument("matmul: shapes " + shape_string(a.shape()) + " x " + shape_string(b.shape()) + " -> " +
                            shape_string(c.shape()) + " do not agree");
  }
  if (a.dtype() != b.dtype() || a.dtype() != c.dtype()) return invalid_argument("matmul: mixed dtypes");
  const char* shader = nullptr;
  if (a.dtype() == DType::kF32) shader = "matmul_tiled_f32";
  if (a.dtype() == DType::kF16) shader = "matmul_tiled_f16";
  if (shader == nullptr) return invalid_argument("matmul: dtype must be f32 or f16");
  if (tile == 0 || tile * tile > 1024 || tile * tile * 8 > 32768) return invalid_argument("matmul: bad tile size");
  MatmulPush push{static_cast<uint32_t>(m), static_cast<uint32_t>(n), static_cast<uint32_t>(k),
                  static_cast<uint32_t>(k), static_cast<uint32_t>(n), static_cast<uint32_t>(n)};
  const uint32_t spec[] = {tile};
  return g.dispatch(shader, spec, {{a, Access::kRead}, {b, Access::kRead}, {c, Access::kWrite}}, push,
                    {static_cast<uint32_t>((n + tile - 1) / tile), static_cast<uint32_t>((m + tile - 1) / tile), 1});
}

}  // namespace recon::gpu::ops
