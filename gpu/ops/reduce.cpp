#include "gpu/ops/reduce.h"

#include <algorithm>
#include <string>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;         // WG specialisation constant (power of two)
constexpr int64_t kRowPerGroupMin = 64;  // shortest row worth a workgroup of its own

struct ReducePush {
  uint32_t outer, axis, inner, base_in, base_out;
};
static_assert(sizeof(ReducePush) == 20, "mirrors Push in shaders/reduce.comp and shaders/argmax.comp");

// `family` is "reduce" or "argmax"; `op` its OP constant; out dtype checked by the caller.
Status run_reduction(Graph& g, const char* family, uint32_t op, const char* name, const Arg& in, const Arg& out,
                     int axis_in) {
  const Shape& s = in.shape();
  const int r = static_cast<int>(s.size());
  if (r == 0) return invalid_argument(std::string(name) + ": cannot reduce a rank-0 tensor");
  if (axis_in < -r || axis_in >= r) {
    return invalid_argument(std::string(name) + ": axis " + std::to_string(axis_in) + " out of range for " +
                            shape_string(s));
  }
  const int axis = axis_in < 0 ? axis_in + r : axis_in;
  if (s[axis] == 0) return invalid_argument(std::string(name) + ": the reduced axis is empty in " + shape_string(s));
  Shape dropped = s, kept = s;
  dropped.erase(dropped.begin() + axis);
  kept[axis] = 1;
  if (out.shape() != dropped && out.shape() != kept) {
    return invalid_argument(std::string(name) + ": reducing " + shape_string(s) + " over axis " + std::to_string(axis) +
                            " gives " + shape_string(dropped) + " (or " + shape_string(kept) + "), out is " +
                            shape_string(out.shape()));
  }
  const char* suffix = in.dtype() == DType::kF32 ? "_f32" : in.dtype() == DType::kF16 ? "_f16" : nullptr;
  if (suffix == nullptr) {
    return invalid_argument(std::string(name) + ": dtype " + dtype_name(in.dtype()) + " (f32 or f16 only)");
  }
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[d];
  for (int d = axis + 1; d < r; ++d) inner *= s[d];
  const int64_t len = s[axis];
  if (outer * inner == 0) return Status::ok();
  if (len > int64_t{0xffffffff} || outer * inner > int64_t{0xffffffff}) {
    return invalid_argument(std::string(name) + ": more than 2^32 elements along an axis");
  }
  const bool row_per_group = inner == 1 && len >= kRowPerGroupMin;
  const std::string shader = std::string(family) + suffix;
  const uint32_t spec[] = {op, kGroup, row_per_group ? 1u : 0u};
  const uint64_t in_row = static_cast<uint64_t>(len * inner) * dtype_size(in.dtype());
  const uint64_t out_row = static_cast<uint64_t>(inner) * dtype_size(out.dtype());
  RECON_ASSIGN_OR_RETURN(int64_t c, rows_per_window({in_row, out_row}, outer));
  for (int64_t o0 = 0; o0 < outer; o0 += c) {
    const int64_t o1 = std::min(outer, o0 + c);
    RECON_ASSIGN_OR_RETURN(Window wi, window(in, o0 * len * inner, o1 * len * inner));
    RECON_ASSIGN_OR_RETURN(Window wo, window(out, o0 * inner, o1 * inner));
    ReducePush push{static_cast<uint32_t>(o1 - o0), static_cast<uint32_t>(len), static_cast<uint32_t>(inner), wi.base,
                    wo.base};
    const uint64_t groups = row_per_group ? static_cast<uint64_t>(o1 - o0)
                                          : (static_cast<uint64_t>((o1 - o0) * inner) + kGroup - 1) / kGroup;
    RECON_RETURN_IF_ERROR(
        g.dispatch(shader, spec, {{wi.arg, Access::kRead}, {wo.arg, Access::kWrite}}, push, Graph::grid_1d(groups)));
  }
  return Status::ok();
}

Status run_arg(Graph& g, uint32_t op, const char* name, const Arg& in, const Arg& out, int axis) {
  if (out.dtype() != DType::kI32) {
    return invalid_argument(std::string(name) + ": out must be i32, is " + dtype_name(out.dtype()));
  }
  return run_reduction(g, "argmax", op, name, in, out, axis);
}

}  // namespace

Status reduce(Graph& g, ReduceOp op, const Arg& in, const Arg& out, int axis) {
  if (static_cast<uint32_t>(op) > static_cast<uint32_t>(ReduceOp::kProd)) return invalid_argument("reduce: unknown op");
  if (in.dtype() != out.dtype()) {
    return invalid_argument(std::string("reduce: in is ") + dtype_name(in.dtype()) + ", out " +
                            dtype_name(out.dtype()));
  }
  return run_reduction(g, "reduce", static_cast<uint32_t>(op), "reduce", in, out, axis);
}

// The argmax shader's OP: bit 0 min, bit 1 ties to the last index.
Status argmax(Graph& g, const Arg& in, const Arg& out, int axis, bool last_index) {
  return run_arg(g, last_index ? 2 : 0, "argmax", in, out, axis);
}
Status argmin(Graph& g, const Arg& in, const Arg& out, int axis, bool last_index) {
  return run_arg(g, last_index ? 3 : 1, "argmin", in, out, axis);
}

}  // namespace recon::gpu::ops
