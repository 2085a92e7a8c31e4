#include "gpu/ops/trilu.h"

#include <algorithm>
#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;

// Mirrored by Push in shaders/trilu.comp.
struct TriluPush {
  uint32_t n, rows, cols, upper;
  int32_t k;
};
static_assert(sizeof(TriluPush) == 20, "mirrors Push in shaders/trilu.comp");

}  // namespace

Status trilu(Graph& g, const Arg& in, const Arg& out, int64_t k, bool upper) {
  const Shape& s = in.shape();
  if (s.size() < 2) return invalid_argument("trilu: rank " + std::to_string(s.size()) + " below 2");
  if (in.dtype() != out.dtype() || s != out.shape() || in.dtype() == DType::kU8) {
    return invalid_argument(std::string("trilu: in ") + dtype_name(in.dtype()) + shape_string(s) + " and out " +
                            dtype_name(out.dtype()) + shape_string(out.shape()) + " must agree (f32, f16 or i32)");
  }
  const int64_t n = in.numel();
  if (n == 0) return Status::ok();
  if (n > INT32_MAX) return invalid_argument("trilu: more than 2^31 elements");
  if (in.bytes() > max_binding_bytes() || out.bytes() > max_binding_bytes()) {
    return invalid_argument("trilu: in and out must each fit one binding");
  }
  TriluPush push{};
  push.n = static_cast<uint32_t>(n);
  push.rows = static_cast<uint32_t>(s[s.size() - 2]);
  push.cols = static_cast<uint32_t>(s.back());
  push.upper = upper ? 1 : 0;
  // Offsets past the matrix keep all or nothing; clamped, they fit the push constant.
  const int64_t bound = std::max<int64_t>(s[s.size() - 2], s.back()) + 1;
  push.k = static_cast<int32_t>(std::clamp<int64_t>(k, -bound, bound));
  const char* shader = dtype_size(in.dtype()) == 4 ? "trilu_b32" : "trilu_b16";
  return g.dispatch(shader, {}, {{in, Access::kRead}, {out, Access::kWrite}}, push,
                    Graph::grid_1d((static_cast<uint64_t>(n) + kGroup - 1) / kGroup));
}

}  // namespace recon::gpu::ops
