#include "gpu/ops/elementwise.h"

#include <algorithm>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "gpu/ops/layout.h"
#include "gpu/ops/wide_access.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;  // local_size_x of shaders/binary.comp
constexpr int kMaxRank = 6;

struct BinaryPush {
  uint32_t n, rank, base_a, base_b, base_out;
  uint32_t shape[6];
  uint32_t stride_a[6];
  uint32_t stride_b[6];
};
static_assert(sizeof(BinaryPush) == 92, "mirrors Push in shaders/binary.comp");

struct BinaryWordsPush {
  uint32_t words, base_a, base_b, base_out;
};
static_assert(sizeof(BinaryWordsPush) == 16, "mirrors Push in shaders/binary_words.comp");

struct WherePush {
  uint32_t n, rank, base_c, base_x, base_y, base_out;
  uint32_t shape[6];
  uint32_t stride_c[6];
  uint32_t stride_x[6];
  uint32_t stride_y[6];
};
static_assert(sizeof(WherePush) == 120, "mirrors Push in shaders/where.comp");

const char* op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "add";
    case BinaryOp::kSub:
      return "sub";
    case BinaryOp::kMul:
      return "mul";
    case BinaryOp::kDiv:
      return "div";
    case BinaryOp::kMax:
      return "max";
    case BinaryOp::kMin:
      return "min";
    case BinaryOp::kPow:
      return "pow";
    case BinaryOp::kPRelu:
      return "prelu";
    case BinaryOp::kShiftLeft:
      return "shift_left";
    case BinaryOp::kShiftRight:
      return "shift_right";
    case BinaryOp::kEqual:
      return "equal";
    case BinaryOp::kLess:
      return "less";
    case BinaryOp::kGreater:
      return "greater";
    case BinaryOp::kLessOrEqual:
      return "less_or_equal";
    case BinaryOp::kGreaterOrEqual:
      return "greater_or_equal";
    case BinaryOp::kAnd:
      return "and";
    case BinaryOp::kOr:
      return "or";
    case BinaryOp::kXor:
      return "xor";
    case BinaryOp::kMod:
      return "mod";
    case BinaryOp::kFmod:
      return "fmod";
  }
  return "?";
}

// Strides of `shape` (left-padded to out's rank) with 0 on broadcast axes.
std::vector<int64_t> broadcast_strides(const Shape& padded, const Shape& out) {
  std::vector<int64_t> s(padded.size(), 0);
  int64_t step = 1;
  for (int d = static_cast<int>(padded.size()) - 1; d >= 0; --d) {
    s[d] = (padded[d] == out[d] && padded[d] != 1) ? step : 0;
    step *= padded[d];
  }
  return s;
}

Shape left_pad(const Shape& s, size_t rank) {
  Shape p(rank - s.size(), 1);
  p.insert(p.end(), s.begin(), s.end());
  return p;
}

// One part of out that fits one binding, and each operand's window and shape (padded to out's rank)
// over it.
struct BroadcastChunk {
  std::vector<Window> in;
  std::vector<Shape> in_shape;
  Window out;
  Shape out_shape;
};

// out's axes with size-1 axes dropped and neighbours merged where they are contiguous in every
// operand; each operand's strides over them (0 where it broadcasts). `same`: one flat axis that
// every operand walks with stride 1.
struct MergedAxes {
  Shape shape;
  std::vector<std::vector<int64_t>> strides;
  bool same = false;
};

Result<MergedAxes> merge_broadcast_axes(const BroadcastChunk& c, const std::string& name) {
  std::vector<std::vector<int64_t>> in_strides;
  for (const Shape& s : c.in_shape) in_strides.push_back(broadcast_strides(s, c.out_shape));
  MergedAxes m;
  m.strides.resize(c.in_shape.size());
  const Shape& po = c.out_shape;
  for (size_t d = 0; d < po.size(); ++d) {
    if (po[d] == 1) continue;
    bool contiguous = !m.shape.empty();
    for (size_t k = 0; contiguous && k < in_strides.size(); ++k) {
      contiguous = m.strides[k].back() == in_strides[k][d] * po[d];
    }
    if (contiguous) {
      m.shape.back() *= po[d];
      for (size_t k = 0; k < in_strides.size(); ++k) m.strides[k].back() = in_strides[k][d];
    } else {
      m.shape.push_back(po[d]);
      for (size_t k = 0; k < in_strides.size(); ++k) m.strides[k].push_back(in_strides[k][d]);
    }
  }
  if (m.shape.size() > static_cast<size_t>(kMaxRank)) {
    return invalid_argument(name + ": " + std::to_string(m.shape.size()) +
                            " independent axes after merging; at most 6 are supported");
  }
  if (shape_numel(po) + c.out.base > int64_t{0xffffffff}) {
    return invalid_argument(name + ": more than 2^32 elements in one dispatch");
  }
  m.same = m.shape.empty() || m.shape.size() == 1;
  for (size_t k = 0; m.same && !m.shape.empty() && k < m.strides.size(); ++k) m.same = m.strides[k][0] == 1;
  return m;
}

// Calls `emit` for parts of out whose windows each fit one binding. Operands of out's shape are
// split as flat ranges; otherwise out's leading size-1 axes are dropped and the parts split its new
// leading axis, an operand broadcast along that axis bound whole in every part.
Status for_each_broadcast_chunk(std::span<const Arg> in, const Arg& out,
                                const std::function<Status(const BroadcastChunk&)>& emit) {
  const uint64_t out_es = dtype_size(out.dtype());
  bool flat = true;
  for (const Arg& a : in) flat = flat && a.shape() == out.shape();
  if (flat) {
    const int64_t n = out.numel();
    std::vector<uint64_t> row_bytes{out_es};
    for (const Arg& a : in) row_bytes.push_back(dtype_size(a.dtype()));
    RECON_ASSIGN_OR_RETURN(int64_t c, rows_per_window(row_bytes, n));
    for (int64_t e0 = 0; e0 < n; e0 += c) {
      const int64_t e1 = std::min(n, e0 + c);
      std::vector<Window> windows;
      for (const Arg& a : in) {
        RECON_ASSIGN_OR_RETURN(Window w, window(a, e0, e1));
        windows.push_back(w);
      }
      RECON_ASSIGN_OR_RETURN(Window wo, window(out, e0, e1));
      RECON_RETURN_IF_ERROR(
          emit(BroadcastChunk{std::move(windows), std::vector<Shape>(in.size(), Shape{e1 - e0}), wo, {e1 - e0}}));
    }
    return Status::ok();
  }
  Shape po = out.shape();
  std::vector<Shape> padded;
  for (const Arg& a : in) padded.push_back(left_pad(a.shape(), po.size()));
  while (po.size() > 1 && po[0] == 1) {
    po.erase(po.begin());
    for (Shape& p : padded) p.erase(p.begin());
  }
  const int64_t rows = po.empty() ? 1 : po[0];
  std::vector<int64_t> in_row;  // elements per row of a split operand; 0: bound whole
  std::vector<uint64_t> row_bytes{static_cast<uint64_t>(out.numel() / rows) * out_es};
  for (size_t k = 0; k < in.size(); ++k) {
    const bool split = !po.empty() && padded[k][0] == rows && rows > 1;
    in_row.push_back(split ? in[k].numel() / rows : 0);
    row_bytes.push_back(static_cast<uint64_t>(in_row.back()) * dtype_size(in[k].dtype()));
  }
  const int64_t out_row = out.numel() / rows;
  RECON_ASSIGN_OR_RETURN(int64_t c, rows_per_window(row_bytes, rows));
  for (int64_t r0 = 0; r0 < rows; r0 += c) {
    const int64_t r1 = std::min(rows, r0 + c);
    std::vector<Window> windows;
    std::vector<Shape> shapes;
    for (size_t k = 0; k < in.size(); ++k) {
      RECON_ASSIGN_OR_RETURN(
          Window w, in_row[k] > 0 ? window(in[k], r0 * in_row[k], r1 * in_row[k]) : window(in[k], 0, in[k].numel()));
      windows.push_back(w);
      shapes.push_back(padded[k]);
      if (in_row[k] > 0) shapes.back()[0] = r1 - r0;
    }
    RECON_ASSIGN_OR_RETURN(Window wo, window(out, r0 * out_row, r1 * out_row));
    Shape so = po;
    if (!so.empty()) so[0] = r1 - r0;
    RECON_RETURN_IF_ERROR(emit(BroadcastChunk{std::move(windows), std::move(shapes), wo, std::move(so)}));
  }
  return Status::ok();
}

// One binary.comp dispatch over a chunk.
Status emit_binary(Graph& g, BinaryOp op, const char* shader, const BroadcastChunk& c, const std::string& name) {
  RECON_ASSIGN_OR_RETURN(MergedAxes m, merge_broadcast_axes(c, name));
  BinaryPush push{};
  push.n = static_cast<uint32_t>(shape_numel(c.out_shape));
  push.base_a = c.in[0].base;
  push.base_b = c.in[1].base;
  push.base_out = c.out.base;
  push.rank = static_cast<uint32_t>(m.shape.size());
  for (size_t d = 0; d < m.shape.size(); ++d) {
    push.shape[d] = static_cast<uint32_t>(m.shape[d]);
    push.stride_a[d] = static_cast<uint32_t>(m.strides[0][d]);
    push.stride_b[d] = static_cast<uint32_t>(m.strides[1][d]);
  }
  const uint32_t spec[] = {static_cast<uint32_t>(op), m.same ? 1u : 0u};
  return g.dispatch(shader, spec,
                    {{c.in[0].arg, Access::kRead}, {c.in[1].arg, Access::kRead}, {c.out.arg, Access::kWrite}}, push,
                    Graph::grid_1d((static_cast<uint64_t>(push.n) + kGroup - 1) / kGroup));
}

// The binary.comp variant for `op` on operands of `a`'s dtype, or an error naming what is refused.
Result<const char*> binary_shader(BinaryOp op, const Arg& a, const Arg& b, const Arg& out, const std::string& name) {
  if (static_cast<uint32_t>(op) > static_cast<uint32_t>(BinaryOp::kShiftRight)) {
    return invalid_argument("binary: unknown op");
  }
  const DType want_out = is_comparison_op(op) ? DType::kI32 : a.dtype();
  if (a.dtype() != b.dtype() || out.dtype() != want_out) {
    return invalid_argument(name + ": dtypes " + dtype_name(a.dtype()) + ", " + dtype_name(b.dtype()) + " -> " +
                            dtype_name(out.dtype()) +
                            (is_comparison_op(op) ? " (operands of one dtype, out i32)" : ""));
  }
  if (a.dtype() == DType::kI32) {
    if (op == BinaryOp::kPow || op == BinaryOp::kPRelu) {
      return invalid_argument(
          name + ": not an integer op (add, sub, mul, div, max, min, mod, fmod, comparisons, logic, shifts)");
    }
    return "binary_i32";
  }
  if (op == BinaryOp::kShiftLeft || op == BinaryOp::kShiftRight) {
    return invalid_argument(name + ": shifts take i32 operands, not " + dtype_name(a.dtype()));
  }
  if (is_logic_op(op)) return invalid_argument(name + ": logic takes i32 booleans, not " + dtype_name(a.dtype()));
  if (a.dtype() == DType::kF32) return is_comparison_op(op) ? "binary_cmp_f32" : "binary_f32";
  if (a.dtype() == DType::kF16) return is_comparison_op(op) ? "binary_cmp_f16" : "binary_f16";
  return invalid_argument(name + ": dtype " + dtype_name(a.dtype()) + " (f32, f16 or i32)");
}

// Checks that `in` broadcast together make out's shape.
Status check_broadcast(std::span<const Arg> in, const Arg& out, const std::string& name) {
  Shape shape = in[0].shape();
  std::string shapes = shape_string(shape);
  for (size_t k = 1; k < in.size(); ++k) {
    Result<Shape> s = broadcast_shape(shape, in[k].shape());
    if (!s.is_ok()) return s.status().with_context(name);
    shape = *s;
    shapes += " and " + shape_string(in[k].shape());
  }
  if (shape != out.shape()) {
    return invalid_argument(name + ": " + shapes + " broadcast to " + shape_string(shape) + ", out is " +
                            shape_string(out.shape()));
  }
  return Status::ok();
}

}  // namespace

Result<Shape> broadcast_shape(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  const Shape pa = left_pad(a, rank), pb = left_pad(b, rank);
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (pa[d] != pb[d] && pa[d] != 1 && pb[d] != 1) {
      return invalid_argument("shapes " + shape_string(a) + " and " + shape_string(b) + " do not broadcast (axis " +
                              std::to_string(d) + " of the aligned shapes)");
    }
    out[d] = pa[d] == 1 ? pb[d] : pa[d];
  }
  return out;
}

Status binary(Graph& g, BinaryOp op, const Arg& a, const Arg& b, const Arg& out) {
  const std::string name = std::string("binary ") + op_name(op);
  RECON_ASSIGN_OR_RETURN(const char* shader, binary_shader(op, a, b, out, name));
  const Arg operands[] = {a, b};
  RECON_RETURN_IF_ERROR(check_broadcast(operands, out, name));
  if (out.numel() == 0) return Status::ok();
  // Float arithmetic over operands of out's shape goes in 16-byte words where a chunk is whole words.
  const bool words = op <= BinaryOp::kPRelu && a.dtype() != DType::kI32;
  const uint32_t vw = elements_per_word(out.dtype());
  return for_each_broadcast_chunk(operands, out, [&](const BroadcastChunk& c) -> Status {
    const int64_t n = shape_numel(c.out_shape);
    const bool flat = c.in_shape[0] == c.out_shape && c.in_shape[1] == c.out_shape;
    if (words && flat && n % vw == 0 && c.in[0].base % vw == 0 && c.in[1].base % vw == 0 && c.out.base % vw == 0) {
      const BinaryWordsPush push{static_cast<uint32_t>(n / vw), c.in[0].base / vw, c.in[1].base / vw, c.out.base / vw};
      const uint32_t spec[] = {static_cast<uint32_t>(op)};
      return g.dispatch(a.dtype() == DType::kF32 ? "binary_words_f32" : "binary_words_f16", spec,
                        {{c.in[0].arg, Access::kRead}, {c.in[1].arg, Access::kRead}, {c.out.arg, Access::kWrite}}, push,
                        {grid_stride_groups(push.words), 1, 1});
    }
    return emit_binary(g, op, shader, c, name);
  });
}

Status where(Graph& g, const Arg& cond, const Arg& x, const Arg& y, const Arg& out) {
  const std::string name = "where";
  if (cond.dtype() != DType::kI32 || x.dtype() != y.dtype() || x.dtype() != out.dtype() || x.dtype() == DType::kU8) {
    return invalid_argument(name + ": dtypes " + dtype_name(cond.dtype()) + ", " + dtype_name(x.dtype()) + ", " +
                            dtype_name(y.dtype()) + " -> " + dtype_name(out.dtype()) +
                            " (cond i32; x, y and out of one dtype: f32, f16 or i32)");
  }
  const Arg operands[] = {cond, x, y};
  RECON_RETURN_IF_ERROR(check_broadcast(operands, out, name));
  if (out.numel() == 0) return Status::ok();
  const char* shader = dtype_size(out.dtype()) == 4 ? "where_b32" : "where_b16";
  return for_each_broadcast_chunk(operands, out, [&](const BroadcastChunk& c) -> Status {
    RECON_ASSIGN_OR_RETURN(MergedAxes m, merge_broadcast_axes(c, name));
    WherePush push{};
    push.n = static_cast<uint32_t>(shape_numel(c.out_shape));
    push.rank = static_cast<uint32_t>(m.shape.size());
    push.base_c = c.in[0].base;
    push.base_x = c.in[1].base;
    push.base_y = c.in[2].base;
    push.base_out = c.out.base;
    for (size_t d = 0; d < m.shape.size(); ++d) {
      push.shape[d] = static_cast<uint32_t>(m.shape[d]);
      push.stride_c[d] = static_cast<uint32_t>(m.strides[0][d]);
      push.stride_x[d] = static_cast<uint32_t>(m.strides[1][d]);
      push.stride_y[d] = static_cast<uint32_t>(m.strides[2][d]);
    }
    const uint32_t spec[] = {m.same ? 1u : 0u};
    return g.dispatch(shader, spec,
                      {{c.in[0].arg, Access::kRead},
                       {c.in[1].arg, Access::kRead},
                       {c.in[2].arg, Access::kRead},
                       {c.out.arg, Access::kWrite}},
                      push, Graph::grid_1d((static_cast<uint64_t>(push.n) + kGroup - 1) / kGroup));
  });
}

}  // namespace recon::gpu::ops
