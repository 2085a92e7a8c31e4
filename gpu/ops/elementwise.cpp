#include "gpu/ops/elementwise.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gpu/ops/layout.h"

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;  // local_size_x of shaders/binary.comp
constexpr int kMaxRank = 6;

struct BinaryPush {
  uint32_t n, rank;
  uint32_t shape[6];
  uint32_t stride_a[6];
  uint32_t stride_b[6];
};
static_assert(sizeof(BinaryPush) == 80, "mirrors Push in shaders/binary.comp");

const char* op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return "add";
    case BinaryOp::kSub: return "sub";
    case BinaryOp::kMul: return "mul";
    case BinaryOp::kDiv: return "div";
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

// One dispatch; every operand is known to fit one binding.
Status emit(Graph& g, BinaryOp op, const char* shader, const Arg& a, const Shape& pa, const Arg& b, const Shape& pb,
            const Arg& out, const Shape& po) {
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
  const int64_t n = out.numel();
  if (n > int64_t{0xffffffff}) return invalid_argument("binary: more than 2^32 elements in one dispatch");
  BinaryPush push{};
  push.n = static_cast<uint32_t>(n);
  push.rank = static_cast<uint32_t>(shape.size());
  const bool same = shape.size() <= 1 && (shape.empty() || (sa[0] == 1 && sb[0] == 1));
  for (size_t d = 0; d < shape.size(); ++d) {
    push.shape[d] = static_cast<uint32_t>(shape[d]);
    push.stride_a[d] = static_cast<uint32_t>(sa[d]);
    push.stride_b[d] = static_cast<uint32_t>(sb[d]);
  }
  const uint32_t spec[] = {static_cast<uint32_t>(op), same ? 1u : 0u};
  return g.dispatch(shader, spec, {{a, Access::kRead}, {b, Access::kRead}, {out, Access::kWrite}}, push,
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
  if (static_cast<uint32_t>(op) > 3) return invalid_argument("binary: unknown op");
  if (a.dtype() != b.dtype() || a.dtype() != out.dtype()) {
    return invalid_argument(name + ": dtypes differ (" + dtype_name(a.dtype()) + ", " + dtype_name(b.dtype()) +
                            " -> " + dtype_name(out.dtype()) + ")");
  }
  const char* shader = a.dtype() == DType::kF32 ? "binary_f32" : a.dtype() == DType::kF16 ? "binary_f16" : nullptr;
  if (shader == nullptr) return invalid_argument(name + ": dtype " + dtype_name(a.dtype()) + " (f32 or f16 only)");
  Result<Shape> bs = broadcast_shape(a.shape(), b.shape());
  if (!bs.is_ok()) return bs.status().with_context(name);
  if (*bs != out.shape()) {
    return invalid_argument(name + ": " + shape_string(a.shape()) + " and " + shape_string(b.shape()) +
                            " broadcast to " + shape_string(*bs) + ", out is " + shape_string(out.shape()));
  }
  if (out.numel() == 0) return Status::ok();
  const uint64_t es = dtype_size(out.dtype());

  // Equal shapes: flat ranges.
  if (a.shape() == b.shape()) {
    const int64_t n = out.numel();
    RECON_ASSIGN_OR_RETURN(int64_t c, rows_per_dispatch({es}, n));
    RECON_ASSIGN_OR_RETURN(Arg fa, reshape_view(a, {n}));
    RECON_ASSIGN_OR_RETURN(Arg fb, reshape_view(b, {n}));
    RECON_ASSIGN_OR_RETURN(Arg fo, reshape_view(out, {n}));
    for (int64_t e0 = 0; e0 < n; e0 += c) {
      const int64_t e1 = std::min(n, e0 + c);
      RECON_ASSIGN_OR_RETURN(Arg va, row_view(fa, e0, e1));
      RECON_ASSIGN_OR_RETURN(Arg vb, row_view(fb, e0, e1));
      RECON_ASSIGN_OR_RETURN(Arg vo, row_view(fo, e0, e1));
      const Shape s{e1 - e0};
      RECON_RETURN_IF_ERROR(emit(g, op, shader, va, s, vb, s, vo, s));
    }
    return Status::ok();
  }

  // Broadcasting: drop out's leading size-1 axes, then split along the new leading axis.
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
  const uint64_t out_row = static_cast<uint64_t>(out.numel() / rows) * es;
  const uint64_t a_row = split_a ? static_cast<uint64_t>(a.numel() / rows) * es : 0;
  const uint64_t b_row = split_b ? static_cast<uint64_t>(b.numel() / rows) * es : 0;
  RECON_ASSIGN_OR_RETURN(int64_t c, rows_per_dispatch({out_row, a_row, b_row}, rows));
  if (c >= rows) return emit(g, op, shader, a, pa, b, pb, out, po);
  RECON_ASSIGN_OR_RETURN(Arg ra, reshape_view(a, {split_a ? rows : 1, a.numel() / (split_a ? rows : 1)}));
  RECON_ASSIGN_OR_RETURN(Arg rb, reshape_view(b, {split_b ? rows : 1, b.numel() / (split_b ? rows : 1)}));
  RECON_ASSIGN_OR_RETURN(Arg ro, reshape_view(out, {rows, out.numel() / rows}));
  for (int64_t r0 = 0; r0 < rows; r0 += c) {
    const int64_t r1 = std::min(rows, r0 + c);
    Shape ca = pa, cb = pb, co = po;
    co[0] = r1 - r0;
    Arg va = a, vb = b;
    if (split_a) {
      RECON_ASSIGN_OR_RETURN(va, row_view(ra, r0, r1));
      ca[0] = r1 - r0;
    }
    if (split_b) {
      RECON_ASSIGN_OR_RETURN(vb, row_view(rb, r0, r1));
      cb[0] = r1 - r0;
    }
    RECON_ASSIGN_OR_RETURN(Arg vo, row_view(ro, r0, r1));
    RECON_RETURN_IF_ERROR(emit(g, op, shader, va, ca, vb, cb, vo, co));
  }
  return Status::ok();
}

}  // namespace recon::gpu::ops
