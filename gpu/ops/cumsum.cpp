#include "gpu/ops/cumsum.h"

#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;

// Mirrored by Push in shaders/cumsum.comp.
struct CumSumPush {
  uint32_t lines, len, inner;
};
static_assert(sizeof(CumSumPush) == 12, "mirrors Push in shaders/cumsum.comp");

}  // namespace

Status cumsum(Graph& g, const Arg& x, const Arg& out, int axis, bool exclusive, bool reverse) {
  const Shape& s = x.shape();
  const int rank = static_cast<int>(s.size());
  const std::string what = "cumsum: x " + std::string(dtype_name(x.dtype())) + shape_string(s) + ", out " +
                           dtype_name(out.dtype()) + shape_string(out.shape());
  if (x.dtype() == DType::kU8 || out.dtype() != x.dtype() || out.shape() != s) {
    return invalid_argument(what + ": x and out f32, f16 or i32 alike, of one shape");
  }
  if (axis < 0) axis += rank;
  if (rank == 0 || axis < 0 || axis >= rank) return invalid_argument(what + ": axis out of range (rank ≥ 1)");
  if (x.numel() > INT32_MAX) return invalid_argument(what + ": more than 2^31 elements");
  if (x.bytes() > max_binding_bytes() || out.bytes() > max_binding_bytes()) {
    return invalid_argument(what + ": x and out must each fit one binding");
  }
  if (x.numel() == 0) return Status::ok();
  int64_t inner = 1;
  for (int d = axis + 1; d < rank; ++d) inner *= s[static_cast<size_t>(d)];
  const int64_t len = s[static_cast<size_t>(axis)];
  const CumSumPush push{static_cast<uint32_t>(x.numel() / len), static_cast<uint32_t>(len),
                        static_cast<uint32_t>(inner)};
  const uint32_t spec[] = {exclusive ? 1u : 0u, reverse ? 1u : 0u};
  const char* shader = x.dtype() == DType::kF32 ? "cumsum_f32" : x.dtype() == DType::kF16 ? "cumsum_f16" : "cumsum_i32";
  return g.dispatch(shader, spec, {{x, Access::kRead}, {out, Access::kWrite}}, push,
                    Graph::grid_1d((static_cast<uint64_t>(push.lines) + kGroup - 1) / kGroup));
}

}  // namespace recon::gpu::ops
