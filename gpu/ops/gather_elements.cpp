#include "gpu/ops/gather_elements.h"

#include <cstddef>
#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;

// Mirrored by Push in shaders/gather_elements.comp.
struct GatherElementsPush {
  uint32_t n, rank, axis, pad0;
  uint32_t data_shape[kMaxGatherElementsRank];
  uint32_t index_shape[kMaxGatherElementsRank];
};
static_assert(sizeof(GatherElementsPush) == 64, "mirrors Push in shaders/gather_elements.comp");

constexpr int kMaxGatherNdTuple = 8;

// Mirrored by Push in shaders/gather_nd.comp.
struct GatherNdPush {
  uint32_t n, k, inner, tuples, slots, pad0, pad1, pad2;
  uint32_t data_shape[kMaxGatherNdTuple];
};
static_assert(sizeof(GatherNdPush) == 64, "mirrors Push in shaders/gather_nd.comp");

}  // namespace

namespace {

// Merges each axis into the one before it where neither is `axis` and the indices span the whole
// data along the inner one: the same elements in fewer axes (a rank-7 loss over [N, C, d1..d5]
// gathers as [N, C, d1·…·d5]). `axis` is renumbered to match.
void merge_axes(Shape& s, Shape& is, int& axis) {
  for (size_t d = s.size(); d-- > 1;) {
    if (static_cast<int>(d) == axis || static_cast<int>(d) - 1 == axis || is[d] != s[d]) continue;
    s[d - 1] *= s[d];
    is[d - 1] *= is[d];
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(d));
    is.erase(is.begin() + static_cast<std::ptrdiff_t>(d));
    if (axis > static_cast<int>(d)) --axis;
  }
}

// One gather_elements.comp dispatch over data of shape `s` (as merged) into out of shape `is`.
Status dispatch_gather(Graph& g, const Arg& data, const Arg& indices, const Arg& out, const Shape& s, const Shape& is,
                       int axis, bool axis_indices) {
  for (const Arg* a : {&data, &indices, &out}) {
    if (a->bytes() > max_binding_bytes()) {
      return invalid_argument(std::string(axis_indices ? "gather" : "gather_elements") +
                              ": each operand must fit one binding");
    }
  }
  GatherElementsPush push{};
  push.n = static_cast<uint32_t>(out.numel());
  push.rank = static_cast<uint32_t>(s.size());
  push.axis = static_cast<uint32_t>(axis);
  for (size_t d = 0; d < s.size(); ++d) {
    push.data_shape[d] = static_cast<uint32_t>(s[d]);
    push.index_shape[d] = static_cast<uint32_t>(is[d]);
  }
  const uint32_t spec[] = {axis_indices ? 1u : 0u};
  const char* shader = dtype_size(data.dtype()) == 4 ? "gather_elements_b32" : "gather_elements_b16";
  return g.dispatch(shader, spec, {{data, Access::kRead}, {indices, Access::kRead}, {out, Access::kWrite}}, push,
                    Graph::grid_1d((static_cast<uint64_t>(push.n) + kGroup - 1) / kGroup));
}

}  // namespace

Status gather_elements(Graph& g, const Arg& data, const Arg& indices, const Arg& out, int axis) {
  Shape s = data.shape(), is = indices.shape();
  const int full_rank = static_cast<int>(s.size());
  const std::string what = "gather_elements: data " + std::string(dtype_name(data.dtype())) + shape_string(s) +
                           ", indices " + dtype_name(indices.dtype()) + shape_string(is) + ", out " +
                           dtype_name(out.dtype()) + shape_string(out.shape());
  if (full_rank == 0 || is.size() != s.size() || out.shape() != is) {
    return invalid_argument(what + ": one rank (at least 1), out shaped as the indices");
  }
  if (data.dtype() != out.dtype() || data.dtype() == DType::kU8 || indices.dtype() != DType::kI32) {
    return invalid_argument(what + ": data and out f32, f16 or i32 alike, indices i32");
  }
  if (axis < 0) axis += full_rank;
  if (axis < 0 || axis >= full_rank) return invalid_argument(what + ": axis out of range");
  for (int d = 0; d < full_rank; ++d) {
    if (d != axis && is[d] > s[d]) return invalid_argument(what + ": the indices outgrow the data off the axis");
  }
  merge_axes(s, is, axis);
  const int rank = static_cast<int>(s.size());
  if (rank > kMaxGatherElementsRank) return invalid_argument(what + ": more than 6 axes after merging");
  for (int d = 0; d < rank; ++d) {
    if (s[d] > INT32_MAX || is[d] > INT32_MAX) return invalid_argument(what + ": extents above 2^31");
  }
  const int64_t n = out.numel();
  if (n == 0) return Status::ok();
  if (s[axis] == 0) return invalid_argument(what + ": nothing to gather along the axis");
  return dispatch_gather(g, data, indices, out, s, is, axis, /*axis_indices=*/false);
}

Status gather(Graph& g, const Arg& data, const Arg& indices, const Arg& out, int axis) {
  const Shape& s = data.shape();
  const int rank = static_cast<int>(s.size());
  const std::string what = "gather: data " + std::string(dtype_name(data.dtype())) + shape_string(s) + ", indices " +
                           dtype_name(indices.dtype()) + shape_string(indices.shape()) + ", out " +
                           dtype_name(out.dtype()) + shape_string(out.shape());
  if (axis < 0) axis += rank;
  if (rank == 0 || axis < 0 || axis >= rank) return invalid_argument(what + ": axis out of range (data of rank ≥ 1)");
  if (data.dtype() != out.dtype() || data.dtype() == DType::kU8 || indices.dtype() != DType::kI32) {
    return invalid_argument(what + ": data and out f32, f16 or i32 alike, indices i32");
  }
  Shape want(s.begin(), s.begin() + axis);
  want.insert(want.end(), indices.shape().begin(), indices.shape().end());
  want.insert(want.end(), s.begin() + axis + 1, s.end());
  if (out.shape() != want) return invalid_argument(what + ": out must be " + shape_string(want));
  // [outer, len, inner] gathered into [outer, indices, inner].
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[d];
  for (int d = axis + 1; d < rank; ++d) inner *= s[d];
  const Shape data3{outer, s[axis], inner}, out3{outer, indices.numel(), inner};
  for (int64_t e : {outer, s[axis], inner, indices.numel()}) {
    if (e > INT32_MAX) return invalid_argument(what + ": extents above 2^31");
  }
  if (out.numel() == 0) return Status::ok();
  if (s[axis] == 0) return invalid_argument(what + ": nothing to gather along the axis");
  return dispatch_gather(g, data, indices, out, data3, out3, 1, /*axis_indices=*/true);
}

Status gather_nd(Graph& g, const Arg& data, const Arg& indices, const Arg& out, int batch_dims) {
  const Shape& s = data.shape();
  const Shape& is = indices.shape();
  const std::string what = "gather_nd: data " + std::string(dtype_name(data.dtype())) + shape_string(s) + ", indices " +
                           dtype_name(indices.dtype()) + shape_string(is) + ", out " + dtype_name(out.dtype()) +
                           shape_string(out.shape()) + ", batch_dims " + std::to_string(batch_dims);
  if (data.dtype() != out.dtype() || data.dtype() == DType::kU8 || indices.dtype() != DType::kI32) {
    return invalid_argument(what + ": data and out f32, f16 or i32 alike, indices i32");
  }
  const int64_t b = batch_dims;
  if (s.empty() || is.empty() || b < 0 || b >= static_cast<int64_t>(is.size()) || b >= static_cast<int64_t>(s.size())) {
    return invalid_argument(what + ": data and indices of rank ≥ 1, batch_dims below both ranks");
  }
  const int64_t k = is.back();
  if (k < 1 || b + k > static_cast<int64_t>(s.size()) || k > kMaxGatherNdTuple) {
    return invalid_argument(what + ": the indices' last axis (k) must be 1 to data's rank - batch_dims (at most 8)");
  }
  int64_t batch = 1, slots = 1, inner = 1;
  for (int64_t d = 0; d < b; ++d) {
    if (s[static_cast<size_t>(d)] != is[static_cast<size_t>(d)]) {
      return invalid_argument(what + ": the batch axes of data and indices differ");
    }
    batch *= s[static_cast<size_t>(d)];
  }
  for (int64_t d = b; d < b + k; ++d) slots *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(b + k); d < s.size(); ++d) inner *= s[d];
  Shape want(is.begin(), is.end() - 1);
  want.insert(want.end(), s.begin() + b + k, s.end());
  if (out.shape() != want) return invalid_argument(what + ": out must be " + shape_string(want));
  for (const Arg* a : {&data, &indices, &out}) {
    if (a->bytes() > max_binding_bytes()) return invalid_argument(what + ": each operand must fit one binding");
  }
  if (data.numel() > INT32_MAX || out.numel() > INT32_MAX) return invalid_argument(what + ": extents above 2^31");
  if (out.numel() == 0) return Status::ok();
  if (slots == 0) return invalid_argument(what + ": nothing to gather from");
  GatherNdPush push{};
  push.n = static_cast<uint32_t>(out.numel());
  push.k = static_cast<uint32_t>(k);
  push.inner = static_cast<uint32_t>(inner);
  push.tuples = static_cast<uint32_t>(indices.numel() / k / batch);
  push.slots = static_cast<uint32_t>(slots);
  for (int64_t d = 0; d < k; ++d) push.data_shape[d] = static_cast<uint32_t>(s[static_cast<size_t>(b + d)]);
  const char* shader = dtype_size(data.dtype()) == 4 ? "gather_nd_b32" : "gather_nd_b16";
  return g.dispatch(shader, {}, {{data, Access::kRead}, {indices, Access::kRead}, {out, Access::kWrite}}, push,
                    Graph::grid_1d((static_cast<uint64_t>(push.n) + kGroup - 1) / kGroup));
}

}  // namespace recon::gpu::ops
