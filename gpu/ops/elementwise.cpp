#include "gpu/ops/elementwise.h"

#include <algorithm>
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

// One dispatch over windows that fit one binding each; pa/pb/po are the shapes of the covered part.
Status emit(Graph& g, BinaryOp op, const char* shader, const Window& a, const Shape& pa, const Window& b,
            const Shape& pb, const Window& out, const Shape& po) {
  const std::vector<int64_t> sa_in = broadcast_strides(pa, po), sb_in = broadcast_strides(pb, po);
  Shape shape;
  std::vector<int64_t> sa, sb;
  for (size_t d = 0; d < po.size(); ++d) {
    if (po[d] == 1) continue;
    if (!shape.empty() && sa.back() == sa_in[d] * po[d] && sb.back() == sb_in[d] * po[d]) {
      shape.back() *= po[d];
      sa.back() = sa_in[d];
      sb.back() = sb_in[d];
    } else {
      shape.push_back(po[d]);
      sa.push_back(sa_in[d]);
      sb.push_back(sb_in[d]);
    }
  }
  if (shape.size() > static_cast<size_t>(kMaxRank)) {
    return invalid_argument(std::string("binary ") + op_name(op) + ": " + std::to_string(shape.size()) +
                            " independent axes after merging; at most 6 are supported");
  }
  const int64_t n = shape_numel(po);
  if (n + out.base > int64_t{0xffffffff}) return invalid_argument("binary: more than 2^32 elements in one dispatch");
  BinaryPush push{};
  push.n = static_cast<uint32_t>(n);
  push.base_a = a.base;
  push.base_b = b.base;
  push.base_out = out.base;
  push.rank = static_cast<uint32_t>(shape.size());
  const bool same = shape.size() <= 1 && (shape.empty() || (sa[0] == 1 && sb[0] == 1));
  for (size_t d = 0; d < shape.size(); ++d) {
    push.shape[d] = static_cast<uint32_t>(shape[d]);
    push.stride_a[d] = static_cast<uint32_t>(sa[d]);
    push.stride_b[d] = static_cast<uint32_t>(sb[d]);
  }
  const uint32_t spec[] = {static_cast<uint32_t>(op), same ? 1u : 0u};
  return g.dispatch(shader, spec, {{a.arg, Access::kRead}, {b.arg, Access::kRead}, {out.arg, Access::kWrite}}, push,
                    Graph::grid_1d((static_cast<uint64_t>(n) + kGroup - 1) / kGroup));
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
  if (static_cast<uint32_t>(op) > static_cast<uint32_t>(BinaryOp::kPRelu)) {
    return invalid_argument("binary: unknown op");
  }
  if (a.dtype() != b.dtype() || a.dtype() != out.dtype()) {
    return invalid_argument(name + ": dtypes differ (" + dtype_name(a.dtype()) + ", " + dtype_name(b.dtype()) + " -> " +
                            dtype_name(out.dtype()) + ")");
  }
  const bool ints = a.dtype() == DType::kI32;
  const char* shader = a.dtype() == DType::kF32   ? "binary_f32"
                       : a.dtype() == DType::kF16 ? "binary_f16"
                       : ints                     ? "binary_i32"
                                                  : nullptr;
  if (shader == nullptr) return invalid_argument(name + ": dtype " + dtype_name(a.dtype()) + " (f32, f16 or i32)");
  if (ints && static_cast<uint32_t>(op) > static_cast<uint32_t>(BinaryOp::kMin)) {
    return invalid_argument(name + ": not an integer op (add, sub, mul, div, max, min)");
  }
  Result<Shape> bs = broadcast_shape(a.shape(), b.shape());
  if (!bs.is_ok()) return bs.status().with_context(name);
  if (*bs != out.shape()) {
    return invalid_argument(name + ": " + shape_string(a.shape()) + " and " + shape_string(b.shape()) +
                            " broadcast to " + shape_string(*bs) + ", out is " + shape_string(out.shape()));
  }
  if (out.numel() == 0) return Status::ok();
  const uint64_t es = dtype_size(out.dtype());

  // Equal shapes: flat ranges, in 16-byte words where each range is whole words.
  if (a.shape() == b.shape()) {
    const int64_t n = out.numel();
    RECON_ASSIGN_OR_RETURN(int64_t c, rows_per_window({es}, n));
    for (int64_t e0 = 0; e0 < n; e0 += c) {
      const int64_t e1 = std::min(n, e0 + c);
      RECON_ASSIGN_OR_RETURN(Window wa, window(a, e0, e1));
      RECON_ASSIGN_OR_RETURN(Window wb, window(b, e0, e1));
      RECON_ASSIGN_OR_RETURN(Window wo, window(out, e0, e1));
      const uint32_t vw = elements_per_word(out.dtype());
      if (!ints && (e1 - e0) % vw == 0 && wa.base % vw == 0 && wb.base % vw == 0 && wo.base % vw == 0) {
        const BinaryWordsPush push{static_cast<uint32_t>((e1 - e0) / vw), wa.base / vw, wb.base / vw, wo.base / vw};
        const uint32_t spec[] = {static_cast<uint32_t>(op)};
        RECON_RETURN_IF_ERROR(g.dispatch(a.dtype() == DType::kF32 ? "binary_words_f32" : "binary_words_f16", spec,
                                         {{wa.arg, Access::kRead}, {wb.arg, Access::kRead}, {wo.arg, Access::kWrite}},
                                         push, {grid_stride_groups(push.words), 1, 1}));
        continue;
      }
      const Shape s{e1 - e0};
      RECON_RETURN_IF_ERROR(emit(g, op, shader, wa, s, wb, s, wo, s));
    }
    return Status::ok();
  }

  // Broadcasting: drop out's leading size-1 axes, then split along the new leading axis. An
  // operand that is broadcast along it is bound whole in every chunk.
  Shape po = out.shape();
  Shape pa = left_pad(a.shape(), po.size()), pb = left_pad(b.shape(), po.size());
  while (po.size() > 1 && po[0] == 1) {
    po.erase(po.begin());
    pa.erase(pa.begin());
    pb.erase(pb.begin());
  }
  const int64_t rows = po.empty() ? 1 : po[0];
  const bool split_a = !po.empty() && pa[0] == rows && rows > 1;
  const bool split_b = !po.empty() && pb[0] == rows && rows > 1;
  const int64_t out_row = out.numel() / rows;
  const int64_t a_row = split_a ? a.numel() / rows : 0, b_row = split_b ? b.numel() / rows : 0;
  RECON_ASSIGN_OR_RETURN(int64_t c, rows_per_window({out_row * es, a_row * es, b_row * es}, rows));
  for (int64_t r0 = 0; r0 < rows; r0 += c) {
    const int64_t r1 = std::min(rows, r0 + c);
    Shape ca = pa, cb = pb, co = po;
    if (!co.empty()) co[0] = r1 - r0;
    if (split_a) ca[0] = r1 - r0;
    if (split_b) cb[0] = r1 - r0;
    RECON_ASSIGN_OR_RETURN(Window wa, split_a ? window(a, r0 * a_row, r1 * a_row) : window(a, 0, a.numel()));
    RECON_ASSIGN_OR_RETURN(Window wb, split_b ? window(b, r0 * b_row, r1 * b_row) : window(b, 0, b.numel()));
    RECON_ASSIGN_OR_RETURN(Window wo, window(out, r0 * out_row, r1 * out_row));
    RECON_RETURN_IF_ERROR(emit(g, op, shader, wa, ca, wb, cb, wo, co));
  }
  return Status::ok();
}

}  // namespace recon::gpu::ops
