#include "gpu/ops/topk.h"

#include <algorithm>
#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 128;  // WG specialisation constant (power of two)

struct TopkPush {
  uint32_t rows, n, k, base_in, base_val, base_idx;
};
static_assert(sizeof(TopkPush) == 24, "mirrors Push in shaders/topk.comp");

// Per-invocation list capacity: the next power of two ≥ k (at least 8), so few pipelines exist.
uint32_t capacity_for(int64_t k) {
  uint32_t c = 8;
  while (c < k) c *= 2;
  return c;
}

}  // namespace

Status topk(Graph& g, const Arg& in, const Arg& values, const Arg& indices, int64_t k, bool largest) {
  const Shape& s = in.shape();
  if (s.empty()) return invalid_argument("topk: in must have at least one axis");
  const int64_t n = s.back();
  if (k < 1 || k > n || k > kMaxTopK) {
    return invalid_argument("topk: k = " + std::to_string(k) + " outside 1.." +
                            std::to_string(std::min<int64_t>(n, kMaxTopK)) + " for rows of " + std::to_string(n));
  }
  Shape want = s;
  want.back() = k;
  if (values.shape() != want || indices.shape() != want) {
    return invalid_argument("topk: values " + shape_string(values.shape()) + " and indices " +
                            shape_string(indices.shape()) + " must both be " + shape_string(want));
  }
  if (values.dtype() != in.dtype() || indices.dtype() != DType::kI32) {
    return invalid_argument(std::string("topk: values must be ") + dtype_name(in.dtype()) + " and indices i32, got " +
                            dtype_name(values.dtype()) + " and " + dtype_name(indices.dtype()));
  }
  const char* shader = in.dtype() == DType::kF32 ? "topk_f32" : in.dtype() == DType::kF16 ? "topk_f16" : nullptr;
  if (shader == nullptr)
    return invalid_argument(std::string("topk: dtype ") + dtype_name(in.dtype()) + " (f32 or f16 only)");
  const int64_t rows = in.numel() / n;
  if (rows == 0) return Status::ok();
  if (n > int64_t{0xffffffff}) return invalid_argument("topk: rows longer than 2^32");
  const uint64_t es = dtype_size(in.dtype());
  RECON_ASSIGN_OR_RETURN(int64_t c, rows_per_window({static_cast<uint64_t>(n) * es, static_cast<uint64_t>(k) * es,
                                                     static_cast<uint64_t>(k) * 4},
                                                    rows));
  const uint32_t spec[] = {kGroup, capacity_for(k), largest ? 1u : 0u};
  for (int64_t r0 = 0; r0 < rows; r0 += c) {
    const int64_t r1 = std::min(rows, r0 + c);
    RECON_ASSIGN_OR_RETURN(Window wi, window(in, r0 * n, r1 * n));
    RECON_ASSIGN_OR_RETURN(Window wv, window(values, r0 * k, r1 * k));
    RECON_ASSIGN_OR_RETURN(Window wx, window(indices, r0 * k, r1 * k));
    TopkPush push{
        static_cast<uint32_t>(r1 - r0), static_cast<uint32_t>(n), static_cast<uint32_t>(k), wi.base, wv.base, wx.base};
    RECON_RETURN_IF_ERROR(g.dispatch(shader, spec,
                                     {{wi.arg, Access::kRead}, {wv.arg, Access::kWrite}, {wx.arg, Access::kWrite}},
                                     push, Graph::grid_1d(static_cast<uint64_t>(r1 - r0))));
  }
  return Status::ok();
}

}  // namespace recon::gpu::ops
