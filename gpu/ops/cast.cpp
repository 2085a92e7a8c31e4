#include "gpu/ops/cast.h"

#include <algorithm>

#include "gpu/ops/elementwise_basic.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/wide_access.h"

namespace recon::gpu::ops {
namespace {
struct CastPush {
  uint32_t n;
};
static_assert(sizeof(CastPush) == 4, "mirrors Push in shaders/cast.comp and cast_words.comp");
}  // namespace

Status cast(Graph& g, const Arg& in, const Arg& out) {
  if (in.shape() != out.shape()) {
    return invalid_argument("cast: shapes differ: " + shape_string(in.shape()) + " -> " + shape_string(out.shape()));
  }
  if (in.dtype() == out.dtype()) return copy(g, in, out);
  const char* shader = nullptr;
  const char* words_shader = nullptr;
  if (in.dtype() == DType::kF32 && out.dtype() == DType::kF16) {
    shader = "cast_f32_f16";
    words_shader = "cast_words_f32_f16";
  }
  if (in.dtype() == DType::kF16 && out.dtype() == DType::kF32) {
    shader = "cast_f16_f32";
    words_shader = "cast_words_f16_f32";
  }
  if (shader == nullptr) return invalid_argument("cast: only f32 <-> f16");
  // Operands beyond one binding (the 175 MiB fp32 head weight on lavapipe) go in flat chunks whose
  // starts stay aligned in both dtypes, so each chunk binds as a plain row view.
  const int64_t n = in.numel();
  RECON_ASSIGN_OR_RETURN(Arg flat_in, reshape_view(in, {n}));
  RECON_ASSIGN_OR_RETURN(Arg flat_out, reshape_view(out, {n}));
  RECON_ASSIGN_OR_RETURN(int64_t chunk, rows_per_dispatch({dtype_size(in.dtype()), dtype_size(out.dtype())}, n));
  for (int64_t e0 = 0; e0 < std::max<int64_t>(n, 1); e0 += chunk) {
    const int64_t e1 = std::min(n, e0 + chunk);
    RECON_ASSIGN_OR_RETURN(Arg src, chunk < n ? row_view(flat_in, e0, e1) : Result<Arg>(flat_in));
    RECON_ASSIGN_OR_RETURN(Arg dst, chunk < n ? row_view(flat_out, e0, e1) : Result<Arg>(flat_out));
    CastPush push{static_cast<uint32_t>(e1 - e0)};
    if (push.n % 4 == 0) {  // four elements per step: a 16-byte fp32 word, an 8-byte fp16 pair
      const CastPush quads{push.n / 4};
      RECON_RETURN_IF_ERROR(g.dispatch(words_shader, {}, {{src, Access::kRead}, {dst, Access::kWrite}}, quads,
                                       {grid_stride_groups(quads.n), 1, 1}));
      continue;
    }
    RECON_RETURN_IF_ERROR(g.dispatch(shader, {}, {{src, Access::kRead}, {dst, Access::kWrite}}, push,
                                     Graph::grid_1d((push.n + 255) / 256)));
  }
  return Status::ok();
}

}  // namespace recon::gpu::ops
