#include "gpu/ops/scatter.h"

#include <string>

#include "gpu/ops/elementwise_basic.h"
#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;

// Mirrored by Push in shaders/scatter.comp.
struct ScatterPush {
  uint32_t n, rank, axis, count, inner, pad0, pad1, pad2;
  uint32_t data_shape[kMaxScatterRank];
  uint32_t index_shape[kMaxScatterRank];
};
static_assert(sizeof(ScatterPush) == 96, "mirrors Push in shaders/scatter.comp");

std::string describe(const char* op, const Arg& data, const Arg& indices, const Arg& updates, const Arg& out) {
  return std::string(op) + ": data " + dtype_name(data.dtype()) + shape_string(data.shape()) + ", indices " +
         dtype_name(indices.dtype()) + shape_string(indices.shape()) + ", updates " + dtype_name(updates.dtype()) +
         shape_string(updates.shape()) + ", out " + dtype_name(out.dtype()) + shape_string(out.shape());
}

// The checks both forms share: dtypes, out shaped as data, sizes a dispatch can address.
Status check_operands(const std::string& what, const Arg& data, const Arg& indices, const Arg& updates,
                      const Arg& out) {
  if (data.dtype() == DType::kU8 || updates.dtype() != data.dtype() || out.dtype() != data.dtype() ||
      indices.dtype() != DType::kI32) {
    return invalid_argument(what + ": data, updates and out f32, f16 or i32 alike, indices i32");
  }
  if (out.shape() != data.shape()) return invalid_argument(what + ": out must be shaped as data");
  if (data.numel() > INT32_MAX || indices.numel() > INT32_MAX || updates.numel() > INT32_MAX) {
    return invalid_argument(what + ": more than 2^31 elements");
  }
  for (const Arg* a : {&data, &indices, &updates, &out}) {
    if (a->bytes() > max_binding_bytes()) return invalid_argument(what + ": each operand must fit one binding");
  }
  return Status::ok();
}

const char* scatter_variant(DType dtype) {
  return dtype == DType::kF32 ? "scatter_f32" : dtype == DType::kF16 ? "scatter_f16" : "scatter_i32";
}

Status dispatch_pass(Graph& g, const Arg& data, const Arg& indices, const Arg& updates, const Arg& out, const Arg& last,
                     ScatterPush push, bool nd, ScatterReduction reduction, uint32_t pass, uint64_t invocations) {
  push.n = static_cast<uint32_t>(invocations);
  const uint32_t spec[] = {nd ? 1u : 0u, static_cast<uint32_t>(reduction), pass};
  // PASS 0 never touches `last`: any buffer stands in for it.
  const Access last_access = pass == 1 ? Access::kReadWrite : Access::kRead;
  return g.dispatch(scatter_variant(data.dtype()), spec,
                    {{data, Access::kRead},
                     {indices, Access::kRead},
                     {updates, Access::kRead},
                     {out, Access::kWrite},
                     {last, last_access}},
                    push, Graph::grid_1d((invocations + kGroup - 1) / kGroup));
}

// `none`: the last update of each destination marked in a table (`destinations` of them: output
// elements, or ND's slots), then applied; a reduction: the gather-style pass.
Status dispatch_scatter(Graph& g, const Arg& data, const Arg& indices, const Arg& updates, const Arg& out,
                        const ScatterPush& push, bool nd, ScatterReduction reduction) {
  const uint64_t n = static_cast<uint64_t>(out.numel());
  if (reduction != ScatterReduction::kNone) {
    return dispatch_pass(g, data, indices, updates, out, indices, push, nd, reduction, 0, n);
  }
  const int64_t destinations = nd ? out.numel() / push.inner : out.numel();
  // i32 words zeroed by fill(), whose 0.0f has the bits of 0.
  RECON_ASSIGN_OR_RETURN(Tensor last, Tensor::empty(g.runtime(), DType::kF32, {destinations}));
  RECON_RETURN_IF_ERROR(fill(g, last, 0.0f));
  const uint64_t marks = nd ? push.count : static_cast<uint64_t>(updates.numel());
  if (marks > 0)
    RECON_RETURN_IF_ERROR(dispatch_pass(g, data, indices, updates, out, last, push, nd, reduction, 1, marks));
  return dispatch_pass(g, data, indices, updates, out, last, push, nd, reduction, 2, n);
}

}  // namespace

Status scatter_elements(Graph& g, const Arg& data, const Arg& indices, const Arg& updates, const Arg& out, int axis,
                        ScatterReduction reduction) {
  const std::string what = describe("scatter_elements", data, indices, updates, out);
  RECON_RETURN_IF_ERROR(check_operands(what, data, indices, updates, out));
  const Shape& s = data.shape();
  const Shape& is = indices.shape();
  const int rank = static_cast<int>(s.size());
  if (rank == 0 || rank > kMaxScatterRank || is.size() != s.size() || updates.shape() != is) {
    return invalid_argument(what + ": indices and updates of one shape, data's rank (1 to 8)");
  }
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return invalid_argument(what + ": axis out of range");
  for (int d = 0; d < rank; ++d) {
    if (d != axis && is[d] > s[d]) return invalid_argument(what + ": the indices outgrow the data off the axis");
  }
  if (out.numel() == 0) return Status::ok();
  ScatterPush push{};
  push.n = static_cast<uint32_t>(out.numel());
  push.rank = static_cast<uint32_t>(rank);
  push.axis = static_cast<uint32_t>(axis);
  for (int d = 0; d < rank; ++d) {
    push.data_shape[d] = static_cast<uint32_t>(s[d]);
    push.index_shape[d] = static_cast<uint32_t>(is[d]);
  }
  return dispatch_scatter(g, data, indices, updates, out, push, /*nd=*/false, reduction);
}

Status scatter_nd(Graph& g, const Arg& data, const Arg& indices, const Arg& updates, const Arg& out,
                  ScatterReduction reduction) {
  const std::string what = describe("scatter_nd", data, indices, updates, out);
  RECON_RETURN_IF_ERROR(check_operands(what, data, indices, updates, out));
  const Shape& s = data.shape();
  const Shape& is = indices.shape();
  if (is.empty() || s.empty()) return invalid_argument(what + ": data and indices of rank ≥ 1");
  const int64_t k = is.back();
  if (k < 1 || k > static_cast<int64_t>(s.size()) || k > kMaxScatterRank) {
    return invalid_argument(what + ": the indices' last axis (k) must be 1 to data's rank (at most 8)");
  }
  Shape want(is.begin(), is.end() - 1);
  want.insert(want.end(), s.begin() + k, s.end());
  if (updates.shape() != want) return invalid_argument(what + ": updates must be " + shape_string(want));
  if (out.numel() == 0) return Status::ok();
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(k); d < s.size(); ++d) inner *= s[d];
  ScatterPush push{};
  push.n = static_cast<uint32_t>(out.numel());
  push.rank = static_cast<uint32_t>(k);
  push.count = static_cast<uint32_t>(indices.numel() / k);
  push.inner = static_cast<uint32_t>(inner);
  for (int64_t d = 0; d < k; ++d) push.data_shape[d] = static_cast<uint32_t>(s[static_cast<size_t>(d)]);
  return dispatch_scatter(g, data, indices, updates, out, push, /*nd=*/true, reduction);
}

}  // namespace recon::gpu::ops
