#include "gpu/ops/layout.h"

#include <algorithm>
#include <atomic>
#include <numeric>
#include <string>

namespace recon::gpu::ops {
namespace {

constexpr uint32_t kGroup = 256;  // local_size_x of layout_strided.comp and concat.comp
constexpr uint32_t kTile = 32, kRowsPerPass = 8;
constexpr uint32_t kMaxGroupCount = 65535;  // Vulkan's guaranteed minimum per dimension

struct StridedPush {
  uint32_t n, rank, base, dst_base;
  uint32_t shape[6];
  uint32_t stride[6];
};
static_assert(sizeof(StridedPush) == 64, "mirrors Push in shaders/layout_strided.comp");

struct TiledPush {
  uint32_t rows, cols, base, row_stride, batch_stride, dst_base;
};
static_assert(sizeof(TiledPush) == 24, "mirrors Push in shaders/permute_tiled.comp");

struct ConcatPush {
  uint32_t n, inner, out_axis, axis_begin, pieces, dst_base;
  uint32_t offsets[8];
  uint32_t bases[7];
};
static_assert(sizeof(ConcatPush) == 84, "mirrors Push in shaders/concat.comp");

constexpr int kMaxPieces = 7;

std::atomic<uint64_t> g_device_limit{0};  // the smallest device limit reported; 0: none yet
std::atomic<uint64_t> g_test_limit{0};    // 0: none

Result<std::string> elem_variant(const char* base, DType dtype) {
  switch (dtype_size(dtype)) {
    case 4:
      return std::string(base) + "_b32";
    case 2:
      return std::string(base) + "_b16";
    case 1:
      return std::string(base) + "_b8";
    default:
      return invalid_argument(std::string(base) + ": unsupported dtype " + dtype_name(dtype));
  }
}

Result<int> normalize_axis(int axis, size_t rank, const char* op) {
  const int r = static_cast<int>(rank);
  if (axis < -r || axis >= r) {
    return invalid_argument(std::string(op) + ": axis " + std::to_string(axis) + " out of range for rank " +
                            std::to_string(r));
  }
  return axis < 0 ? axis + r : axis;
}

bool fits_u32(int64_t v) {
  return v >= 0 && v <= int64_t{0xffffffff};
}

// One strided gather, already known to fit the binding limits: merges axes, picks the tiled
// transpose when the merged pattern is a (batched) transpose, else the generic kernel.
Status emit_gather(Graph& g, const Arg& in, const Window& out, const Shape& shape_in,
                   const std::vector<int64_t>& stride_in, int64_t base) {
  // Drop unit axes, then merge an axis into its outer neighbour when they stay adjacent in memory.
  Shape shape;
  std::vector<int64_t> stride;
  for (size_t d = 0; d < shape_in.size(); ++d) {
    if (shape_in[d] == 1) continue;
    if (!shape.empty() && stride.back() == stride_in[d] * shape_in[d]) {
      shape.back() *= shape_in[d];
      stride.back() = stride_in[d];
    } else {
      shape.push_back(shape_in[d]);
      stride.push_back(stride_in[d]);
    }
  }
  if (shape.size() > static_cast<size_t>(kMaxLayoutRank)) {
    return invalid_argument("layout copy: the access pattern has " + std::to_string(shape.size()) +
                            " independent axes after merging; at most 6 are supported");
  }
  const int64_t n = shape_numel(shape_in);
  if (!fits_u32(n + out.base) || !fits_u32(in.numel()) || !fits_u32(base)) {
    return invalid_argument("layout copy: more than 2^32 elements in one dispatch");
  }
  // Tiled transpose: out [B, C, R] with strides (batch, 1, row) — or [C, R] with (1, row).
  const size_t rank = shape.size();
  if ((rank == 2 || rank == 3) && stride[rank - 2] == 1 && stride[rank - 1] > 1) {
    const int64_t batch = rank == 3 ? shape[0] : 1;
    const int64_t cols = shape[rank - 2], rows = shape[rank - 1];
    const int64_t gx = (cols + kTile - 1) / kTile, gy = (rows + kTile - 1) / kTile;
    if (gx <= kMaxGroupCount && gy <= kMaxGroupCount && batch <= kMaxGroupCount) {
      RECON_ASSIGN_OR_RETURN(std::string shader, elem_variant("permute_tiled", in.dtype()));
      TiledPush push{static_cast<uint32_t>(rows),
                     static_cast<uint32_t>(cols),
                     static_cast<uint32_t>(base),
                     static_cast<uint32_t>(stride[rank - 1]),
                     rank == 3 ? static_cast<uint32_t>(stride[0]) : 0u,
                     out.base};
      const uint32_t spec[] = {kTile, kRowsPerPass};
      return g.dispatch(shader, spec, {{in, Access::kRead}, {out.arg, Access::kWrite}}, push,
                        {static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), static_cast<uint32_t>(batch)});
    }
  }
  // In 16-byte words where the innermost axis is contiguous whole words and every other stride and
  // both bases are whole words (layout_strided.comp, WORDS).
  const int64_t ew = 16 / static_cast<int64_t>(dtype_size(in.dtype()));
  bool words = rank > 0 && stride[rank - 1] == 1 && shape[rank - 1] % ew == 0 && base % ew == 0 && out.base % ew == 0;
  for (size_t d = 0; words && d + 1 < rank; ++d) words = stride[d] % ew == 0;
  const int64_t unit = words ? ew : 1;
  RECON_ASSIGN_OR_RETURN(std::string shader, elem_variant("layout_strided", in.dtype()));
  StridedPush push{};
  push.n = static_cast<uint32_t>(n / unit);
  push.rank = static_cast<uint32_t>(rank);
  push.base = static_cast<uint32_t>(base / unit);
  push.dst_base = out.base / static_cast<uint32_t>(unit);
  for (size_t d = 0; d < rank; ++d) {
    if (stride[d] < INT32_MIN || stride[d] > int64_t{0xffffffff}) {
      return invalid_argument("layout copy: stride beyond 2^32 elements");
    }
    const bool inner = d + 1 == rank;
    push.shape[d] = static_cast<uint32_t>(inner ? shape[d] / unit : shape[d]);
    // A negative stride (a reversed slice) as two's complement: the shader's sum wraps to the index.
    push.stride[d] = static_cast<uint32_t>(inner ? stride[d] : stride[d] / unit);
  }
  const uint32_t spec[] = {words ? 1u : 0u};
  return g.dispatch(shader, spec, {{in, Access::kRead}, {out.arg, Access::kWrite}}, push,
                    Graph::grid_1d((static_cast<uint64_t>(n / unit) + kGroup - 1) / kGroup));
}

// out (contiguous, `shape`) [c] = in[base + Σ c_d·stride[d]] (a stride may be negative). When an
// operand is too large for one binding, splits along out axis 0 and binds a window of `in`
// covering each chunk's reads.
Status gather(Graph& g, const Arg& in, const Arg& out, const Shape& shape_in, const std::vector<int64_t>& stride_in,
              int64_t base) {
  if (out.numel() == 0) return Status::ok();
  if (in.bytes() <= max_binding_bytes() && out.bytes() <= max_binding_bytes()) {
    return emit_gather(g, in, Window{out, 0}, shape_in, stride_in, base);
  }
  // Split along the first axis that is not 1.
  Shape shape = shape_in;
  std::vector<int64_t> stride = stride_in;
  while (shape.size() > 1 && shape[0] == 1) {
    shape.erase(shape.begin());
    stride.erase(stride.begin());
  }
  const int64_t es = static_cast<int64_t>(dtype_size(in.dtype()));
  const int64_t rows = shape[0];
  const int64_t out_row = out.numel() / rows;
  int64_t rest_lo = 0, rest_hi = 0;  // the nearest and farthest elements one out row reaches from its first
  for (size_t d = 1; d < shape.size(); ++d) {
    const int64_t reach = (shape[d] - 1) * stride[d];
    (reach < 0 ? rest_lo : rest_hi) += reach;
  }
  const int64_t row_span = rest_hi - rest_lo + 1;
  // Rows per chunk: out rows and the in window of c rows, (c−1)·|stride0| + row_span elements,
  // each plus alignment slack.
  const int64_t room = static_cast<int64_t>(max_binding_bytes() - kBindingOffsetAlign) / es;
  int64_t c = room < row_span ? 0 : room / out_row;
  if (stride[0] != 0 && c > 0) c = std::min(c, (room - row_span) / std::abs(stride[0]) + 1);
  if (c <= 0) {
    return invalid_argument("layout copy: operands of " + std::to_string(in.bytes()) + " and " +
                            std::to_string(out.bytes()) +
                            " bytes exceed one binding and cannot be split along axis 0 (the access pattern "
                            "reaches across it); split along the batch axis instead");
  }
  for (int64_t r0 = 0; r0 < rows; r0 += c) {
    const int64_t r1 = std::min(rows, r0 + c);
    const int64_t first = base + r0 * stride[0], last = base + (r1 - 1) * stride[0];
    const int64_t lo = std::min(first, last) + rest_lo;
    RECON_ASSIGN_OR_RETURN(Window iw, window(in, lo, std::max(first, last) + rest_hi + 1));
    RECON_ASSIGN_OR_RETURN(Window ow, window(out, r0 * out_row, r1 * out_row));
    Shape chunk_shape = shape;
    chunk_shape[0] = r1 - r0;
    RECON_RETURN_IF_ERROR(emit_gather(g, iw.arg, ow, chunk_shape, stride, iw.base + (first - lo)));
  }
  return Status::ok();
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

// One concat dispatch over [outer, axis, inner]: pieces (≤ 7) cover out's axis range
// [axis_begin, axis_begin + Σ len) in order. The caller guarantees every window fits.
struct Piece {
  Window w;
  int64_t len;  // along the axis
};
Status emit_concat(Graph& g, const Window& out, int64_t outer, int64_t out_axis, int64_t inner, int64_t axis_begin,
                   const std::vector<Piece>& pieces) {
  ConcatPush push{};
  int64_t covered = 0;
  for (size_t k = 0; k < pieces.size(); ++k) {
    push.offsets[k] = static_cast<uint32_t>(covered);
    push.bases[k] = pieces[k].w.base;
    covered += pieces[k].len;
  }
  push.offsets[pieces.size()] = static_cast<uint32_t>(covered);
  const int64_t n = outer * covered * inner;
  if (n == 0) return Status::ok();
  if (!fits_u32(n) || !fits_u32(out.arg.numel())) return invalid_argument("concat: more than 2^32 elements");
  push.n = static_cast<uint32_t>(n);
  push.inner = static_cast<uint32_t>(inner);
  push.out_axis = static_cast<uint32_t>(out_axis);
  push.axis_begin = static_cast<uint32_t>(axis_begin);
  push.pieces = static_cast<uint32_t>(pieces.size());
  push.dst_base = out.base;
  auto piece = [&](size_t k) { return pieces[k < pieces.size() ? k : 0].w.arg; };
  RECON_ASSIGN_OR_RETURN(std::string shader, elem_variant("concat", out.arg.dtype()));
  return g.dispatch(shader, {},
                    {{out.arg, Access::kWrite},
                     {piece(0), Access::kRead},
                     {piece(1), Access::kRead},
                     {piece(2), Access::kRead},
                     {piece(3), Access::kRead},
                     {piece(4), Access::kRead},
                     {piece(5), Access::kRead},
                     {piece(6), Access::kRead}},
                    push, Graph::grid_1d((static_cast<uint64_t>(n) + kGroup - 1) / kGroup));
}

}  // namespace

uint64_t binding_limit_for(uint64_t max_storage_buffer_range) {
  return std::min(max_storage_buffer_range, kMaxBindingBytesCap) / kBindingOffsetAlign * kBindingOffsetAlign;
}

void note_device_binding_limit(uint64_t max_storage_buffer_range) {
  const uint64_t limit = binding_limit_for(max_storage_buffer_range);
  if (limit == 0) return;  // no usable range: nothing to learn from this device
  uint64_t cur = g_device_limit.load();
  while ((cur == 0 || limit < cur) && !g_device_limit.compare_exchange_weak(cur, limit)) {
  }
}

uint64_t max_binding_bytes() {
  const uint64_t reported = g_device_limit.load(std::memory_order_relaxed);
  const uint64_t device = reported ? reported : kGuaranteedBindingBytes;
  const uint64_t test = g_test_limit.load(std::memory_order_relaxed);
  return test ? std::min(test, device) : device;
}

void set_max_binding_bytes_for_testing(uint64_t bytes) {
  g_test_limit.store(bytes, std::memory_order_relaxed);
}

Result<Arg> reshape_view(const Arg& a, const Shape& shape) {
  if (shape_numel(shape) != a.numel()) {
    return invalid_argument("reshape: cannot view " + shape_string(a.shape()) + " as " + shape_string(shape));
  }
  if (a.is_slot()) return Arg::slot(a.slot_index(), a.dtype(), shape);
  RECON_ASSIGN_OR_RETURN(Tensor t, a.tensor().reshape(shape));
  return Arg(t);
}

Result<Arg> row_view(const Arg& a, int64_t begin, int64_t end) {
  if (a.shape().empty() || begin < 0 || end < begin || end > a.shape()[0]) {
    return invalid_argument("row view [" + std::to_string(begin) + "," + std::to_string(end) + ") out of " +
                            shape_string(a.shape()));
  }
  if (a.is_slot()) {
    if (begin == 0 && end == a.shape()[0]) return a;
    return invalid_argument("a graph slot of " + std::to_string(a.bytes()) +
                            " bytes would have to be split into row ranges to stay within one binding; bind it as a "
                            "fixed tensor instead");
  }
  RECON_ASSIGN_OR_RETURN(Tensor t, a.tensor().slice_rows(begin, end));
  return Arg(t);
}

Result<Window> window(const Arg& a, int64_t begin, int64_t end) {
  if (begin < 0 || end < begin || end > a.numel()) {
    return invalid_argument("window [" + std::to_string(begin) + "," + std::to_string(end) + ") out of " +
                            std::to_string(a.numel()) + " elements");
  }
  if (a.bytes() <= max_binding_bytes()) return Window{a, static_cast<uint32_t>(begin)};
  const int64_t align = static_cast<int64_t>(kBindingOffsetAlign / dtype_size(a.dtype()));
  const int64_t start = begin / align * align;
  RECON_ASSIGN_OR_RETURN(Arg flat, reshape_view(a, {a.numel()}));
  RECON_ASSIGN_OR_RETURN(Arg view, row_view(flat, start, end));
  return Window{view, static_cast<uint32_t>(begin - start)};
}

Result<int64_t> rows_per_dispatch(std::span<const uint64_t> row_bytes, int64_t total_rows) {
  uint64_t widest = 0;
  int64_t quantum = 1;
  for (uint64_t b : row_bytes) {
    widest = std::max(widest, b);
    if (b > 0) {
      quantum = std::lcm(quantum, static_cast<int64_t>(kBindingOffsetAlign / std::gcd(b, kBindingOffsetAlign)));
    }
  }
  if (widest == 0 || widest * static_cast<uint64_t>(total_rows) <= max_binding_bytes()) {
    return std::max<int64_t>(total_rows, 1);
  }
  const int64_t rows = static_cast<int64_t>(max_binding_bytes() / widest) / quantum * quantum;
  if (rows <= 0) {
    return invalid_argument("rows of " + std::to_string(widest) + " bytes cannot be split into aligned bindings of " +
                            std::to_string(max_binding_bytes()) + " bytes (" + std::to_string(quantum) +
                            " rows per dispatch needed for alignment)");
  }
  return rows;
}

Result<int64_t> rows_per_dispatch(std::initializer_list<uint64_t> row_bytes, int64_t total_rows) {
  return rows_per_dispatch(std::span<const uint64_t>(row_bytes.begin(), row_bytes.size()), total_rows);
}

Result<int64_t> rows_per_window(std::span<const uint64_t> row_bytes, int64_t total_rows) {
  uint64_t widest = 0;
  for (uint64_t b : row_bytes) widest = std::max(widest, b);
  if (widest == 0 || widest * static_cast<uint64_t>(total_rows) <= max_binding_bytes()) {
    return std::max<int64_t>(total_rows, 1);
  }
  const int64_t rows = static_cast<int64_t>((max_binding_bytes() - kBindingOffsetAlign) / widest);
  if (rows <= 0) {
    return invalid_argument("a row of " + std::to_string(widest) + " bytes is too large for one binding of " +
                            std::to_string(max_binding_bytes()) + " bytes (less 256 bytes of alignment slack)");
  }
  return rows;
}

Result<int64_t> rows_per_window(std::initializer_list<uint64_t> row_bytes, int64_t total_rows) {
  return rows_per_window(std::span<const uint64_t>(row_bytes.begin(), row_bytes.size()), total_rows);
}

Status permute(Graph& g, const Arg& in, const Arg& out, const std::vector<int>& perm) {
  const Shape& s = in.shape();
  if (perm.size() != s.size()) {
    return invalid_argument("permute: " + std::to_string(perm.size()) + " axes given for a tensor of rank " +
                            std::to_string(s.size()));
  }
  std::vector<bool> seen(s.size(), false);
  for (int p : perm) {
    if (p < 0 || p >= static_cast<int>(s.size()) || seen[p]) {
      return invalid_argument("permute: the axes are not a permutation of 0.." + std::to_string(s.size() - 1));
    }
    seen[p] = true;
  }
  if (in.dtype() != out.dtype()) {
    return invalid_argument(std::string("permute: dtype ") + dtype_name(in.dtype()) + " into " +
                            dtype_name(out.dtype()));
  }
  Shape want(s.size());
  for (size_t d = 0; d < s.size(); ++d) want[d] = s[perm[d]];
  if (out.shape() != want) {
    return invalid_argument("permute: " + shape_string(s) + " permuted is " + shape_string(want) + ", out is " +
                            shape_string(out.shape()));
  }
  if (s.empty()) return gather(g, in, out, {1}, {1}, 0);
  const std::vector<int64_t> in_strides = contiguous_strides(s);
  std::vector<int64_t> stride(s.size());
  for (size_t d = 0; d < s.size(); ++d) stride[d] = in_strides[perm[d]];
  return gather(g, in, out, want, stride, 0);
}

Status transpose(Graph& g, const Arg& in, const Arg& out, int dim0, int dim1) {
  RECON_ASSIGN_OR_RETURN(int a, normalize_axis(dim0, in.shape().size(), "transpose"));
  RECON_ASSIGN_OR_RETURN(int b, normalize_axis(dim1, in.shape().size(), "transpose"));
  std::vector<int> perm(in.shape().size());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[a], perm[b]);
  return permute(g, in, out, perm);
}

Status slice(Graph& g, const Arg& in, const Arg& out, const std::vector<SliceAxis>& axes) {
  const Shape& s = in.shape();
  if (axes.size() > s.size()) {
    return invalid_argument("slice: " + std::to_string(axes.size()) + " axes given for rank " +
                            std::to_string(s.size()));
  }
  if (in.dtype() != out.dtype()) return invalid_argument("slice: in and out dtypes differ");
  const std::vector<int64_t> in_strides = contiguous_strides(s);
  Shape want = s;
  std::vector<int64_t> stride = in_strides;
  int64_t base = 0;
  for (size_t d = 0; d < axes.size(); ++d) {
    const SliceAxis& a = axes[d];
    if (a.step == 0) return invalid_argument("slice: step 0 (axis " + std::to_string(d) + ")");
    // Python's bounds: [0, dim] for a positive step, [−1, dim − 1] for a negative one.
    const int64_t lowest = a.step > 0 ? 0 : -1;
    auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + s[d] : v, lowest, s[d] + lowest); };
    const int64_t start = clamp(a.start), stop = clamp(a.stop);
    const int64_t span = a.step > 0 ? stop - start : start - stop, step = std::abs(a.step);
    want[d] = span > 0 ? (span + step - 1) / step : 0;
    base += start * in_strides[d];
    stride[d] = in_strides[d] * a.step;
  }
  if (out.shape() != want) {
    return invalid_argument("slice: the slice of " + shape_string(s) + " has shape " + shape_string(want) +
                            ", out is " + shape_string(out.shape()));
  }
  if (s.empty()) return gather(g, in, out, {1}, {1}, 0);
  return gather(g, in, out, want, stride, base);
}

Status concat(Graph& g, std::span<const Arg> inputs, int axis_in, const Arg& out) {
  if (inputs.empty()) return invalid_argument("concat: no inputs");
  const Shape& os = out.shape();
  RECON_ASSIGN_OR_RETURN(int axis, normalize_axis(axis_in, os.size(), "concat"));
  int64_t total = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape& is = inputs[i].shape();
    bool ok = is.size() == os.size() && inputs[i].dtype() == out.dtype();
    for (size_t d = 0; ok && d < os.size(); ++d) ok = static_cast<int>(d) == axis || is[d] == os[d];
    if (!ok) {
      return invalid_argument("concat: input " + std::to_string(i) + " " + dtype_name(inputs[i].dtype()) +
                              shape_string(is) + " does not match out " + dtype_name(out.dtype()) + shape_string(os) +
                              " outside axis " + std::to_string(axis));
    }
    total += is[axis];
  }
  if (total != os[axis]) {
    return invalid_argument("concat: inputs sum to " + std::to_string(total) + " along axis " + std::to_string(axis) +
                            ", out has " + std::to_string(os[axis]));
  }
  if (out.numel() == 0) return Status::ok();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= os[d];
  for (size_t d = axis + 1; d < os.size(); ++d) inner *= os[d];
  if (outer == 1) {  // concatenation of flat blocks: view everything as 1-D
    inner = 1;
  }
  const uint64_t es = dtype_size(out.dtype());
  // Lengths along the axis of [outer, axis, inner] views (flat blocks when outer == 1).
  auto axis_len = [&](const Arg& a) { return outer == 1 ? a.numel() : a.shape()[axis]; };
  const int64_t out_axis = axis_len(out);

  if (outer > 1) {  // chunks of outer rows (one chunk when everything fits); every input in each
    std::vector<uint64_t> row_bytes{static_cast<uint64_t>(out_axis * inner) * es};
    for (const Arg& a : inputs) row_bytes.push_back(static_cast<uint64_t>(axis_len(a) * inner) * es);
    RECON_ASSIGN_OR_RETURN(int64_t c, rows_per_window(row_bytes, outer));
    for (int64_t r0 = 0; r0 < outer; r0 += c) {
      const int64_t r1 = std::min(outer, r0 + c);
      RECON_ASSIGN_OR_RETURN(Window ow, window(out, r0 * out_axis * inner, r1 * out_axis * inner));
      int64_t begin = 0;
      for (size_t i0 = 0; i0 < inputs.size(); i0 += kMaxPieces) {
        std::vector<Piece> pieces;
        int64_t len = 0;
        for (size_t i = i0; i < std::min(inputs.size(), i0 + kMaxPieces); ++i) {
          const int64_t ai = axis_len(inputs[i]);
          if (ai == 0) continue;
          RECON_ASSIGN_OR_RETURN(Window iw, window(inputs[i], r0 * ai * inner, r1 * ai * inner));
          pieces.push_back({iw, ai});
          len += ai;
        }
        if (!pieces.empty()) RECON_RETURN_IF_ERROR(emit_concat(g, ow, r1 - r0, out_axis, inner, begin, pieces));
        begin += len;
      }
    }
    return Status::ok();
  }

  // outer == 1: flat blocks, up to 7 inputs per dispatch when all fit, else each input in ranges.
  bool fits = out.bytes() <= max_binding_bytes();
  for (const Arg& a : inputs) fits = fits && a.bytes() <= max_binding_bytes();
  if (fits) {
    int64_t begin = 0;
    for (size_t i0 = 0; i0 < inputs.size(); i0 += kMaxPieces) {
      std::vector<Piece> pieces;
      int64_t len = 0;
      for (size_t i = i0; i < std::min(inputs.size(), i0 + kMaxPieces); ++i) {
        if (inputs[i].numel() == 0) continue;
        pieces.push_back({Window{inputs[i], 0}, inputs[i].numel()});
        len += inputs[i].numel();
      }
      if (!pieces.empty()) RECON_RETURN_IF_ERROR(emit_concat(g, Window{out, 0}, 1, out_axis, 1, begin, pieces));
      begin += len;
    }
    return Status::ok();
  }
  const int64_t chunk = static_cast<int64_t>((max_binding_bytes() - kBindingOffsetAlign) / es);
  int64_t offset = 0;
  for (const Arg& a : inputs) {
    const int64_t n = a.numel();
    for (int64_t e0 = 0; e0 < n; e0 += chunk) {
      const int64_t e1 = std::min(n, e0 + chunk);
      RECON_ASSIGN_OR_RETURN(Window iw, window(a, e0, e1));
      RECON_ASSIGN_OR_RETURN(Window ow, window(out, offset + e0, offset + e1));
      // The out window starts at element offset + e0 − ow.base; address it with axis_begin.
      const int64_t ow_len = ow.arg.numel();
      RECON_RETURN_IF_ERROR(emit_concat(g, Window{ow.arg, 0}, 1, ow_len, 1, ow.base, {{iw, e1 - e0}}));
    }
    offset += n;
  }
  return Status::ok();
}

Status concat(Graph& g, std::initializer_list<Arg> inputs, int axis, const Arg& out) {
  return concat(g, std::span<const Arg>(inputs.begin(), inputs.size()), axis, out);
}

Status split(Graph& g, const Arg& in, int axis_in, std::span<const Arg> outputs) {
  if (outputs.empty()) return invalid_argument("split: no outputs");
  const Shape& s = in.shape();
  RECON_ASSIGN_OR_RETURN(int axis, normalize_axis(axis_in, s.size(), "split"));
  int64_t total = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Shape& os = outputs[i].shape();
    bool ok = os.size() == s.size() && outputs[i].dtype() == in.dtype();
    for (size_t d = 0; ok && d < s.size(); ++d) ok = static_cast<int>(d) == axis || os[d] == s[d];
    if (!ok) {
      return invalid_argument("split: output " + std::to_string(i) + " " + dtype_name(outputs[i].dtype()) +
                              shape_string(os) + " does not match in " + dtype_name(in.dtype()) + shape_string(s) +
                              " outside axis " + std::to_string(axis));
    }
    total += os[axis];
  }
  if (total != s[axis]) {
    return invalid_argument("split: outputs sum to " + std::to_string(total) + " along axis " + std::to_string(axis) +
                            ", in has " + std::to_string(s[axis]));
  }
  std::vector<SliceAxis> axes(axis + 1);
  int64_t offset = 0;
  for (const Arg& o : outputs) {
    axes[axis] = {offset, offset + o.shape()[axis], 1};
    RECON_RETURN_IF_ERROR(slice(g, in, o, axes));
    offset += o.shape()[axis];
  }
  return Status::ok();
}

Status split(Graph& g, const Arg& in, int axis, std::initializer_list<Arg> outputs) {
  return split(g, in, axis, std::span<const Arg>(outputs.begin(), outputs.size()));
}

Status tokens_to_nchw(Graph& g, const Arg& tokens, const Arg& out) {
  const Shape& t = tokens.shape();
  const Shape& o = out.shape();
  if (t.size() != 3 || o.size() != 4 || t[0] != o[0] || t[2] != o[1] || t[1] != o[2] * o[3]) {
    return invalid_argument("tokens_to_nchw: tokens " + shape_string(t) + " must be [B, h·w, C] for out [B, C, h, w] " +
                            shape_string(o));
  }
  RECON_ASSIGN_OR_RETURN(Arg out3, reshape_view(out, {o[0], o[1], o[2] * o[3]}));
  return permute(g, tokens, out3, {0, 2, 1});
}

Status nchw_to_tokens(Graph& g, const Arg& in, const Arg& tokens) {
  const Shape& s = in.shape();
  const Shape& t = tokens.shape();
  if (s.size() != 4 || t.size() != 3 || t[0] != s[0] || t[2] != s[1] || t[1] != s[2] * s[3]) {
    return invalid_argument("nchw_to_tokens: in [B, C, h, w] " + shape_string(s) + " needs tokens [B, h·w, C], got " +
                            shape_string(t));
  }
  RECON_ASSIGN_OR_RETURN(Arg in3, reshape_view(in, {s[0], s[1], s[2] * s[3]}));
  return permute(g, in3, tokens, {0, 2, 1});
}

}  // namespace recon::gpu::ops
