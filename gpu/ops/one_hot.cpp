#include "gpu/ops/one_hot.h"

#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;

// Mirrored by Push in shaders/one_hot.comp.
struct OneHotPush {
  uint32_t n, depth, inner;
  float on, off;
};
static_assert(sizeof(OneHotPush) == 20, "mirrors Push in shaders/one_hot.comp");

}  // namespace

Status one_hot(Graph& g, const Arg& indices, const Arg& out, int axis, float on, float off) {
  const Shape& s = out.shape();
  const int rank = static_cast<int>(s.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return invalid_argument("one_hot: axis out of range for " + shape_string(s));
  if (indices.dtype() != DType::kI32 || (out.dtype() != DType::kF32 && out.dtype() != DType::kF16)) {
    return invalid_argument(std::string("one_hot: indices ") + dtype_name(indices.dtype()) + ", out " +
                            dtype_name(out.dtype()) + " (i32 indices, f32 or f16 out)");
  }
  const int64_t depth = s[static_cast<size_t>(axis)];
  if (indices.numel() * depth != out.numel()) {
    return invalid_argument("one_hot: " + std::to_string(indices.numel()) + " indices for out " + shape_string(s) +
                            " along axis " + std::to_string(axis));
  }
  const int64_t n = out.numel();
  if (n == 0) return Status::ok();
  if (n > INT32_MAX) return invalid_argument("one_hot: more than 2^31 elements");
  if (indices.bytes() > max_binding_bytes() || out.bytes() > max_binding_bytes()) {
    return invalid_argument("one_hot: indices and out must each fit one binding");
  }
  int64_t inner = 1;
  for (int d = axis + 1; d < rank; ++d) inner *= s[static_cast<size_t>(d)];
  const OneHotPush push{static_cast<uint32_t>(n), static_cast<uint32_t>(depth), static_cast<uint32_t>(inner), on, off};
  const char* shader = out.dtype() == DType::kF32 ? "one_hot_f32" : "one_hot_f16";
  return g.dispatch(shader, {}, {{indices, Access::kRead}, {out, Access::kWrite}}, push,
                    Graph::grid_1d((static_cast<uint64_t>(n) + kGroup - 1) / kGroup));
}

}  // namespace recon::gpu::ops
