#include "gpu/models/onnx/onnx_fold.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "gpu/models/onnx/onnx_host.h"
#include "gpu/tensor.h"

namespace recon::gpu::onnx {
namespace {

// Row-major strides of `dims`.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> stride(dims.size());
  int64_t step = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    stride[d] = step;
    step *= dims[d];
  }
  return stride;
}

// Element offsets of `dims` (left-padded to out's rank) for every index of `out`, with broadcast
// axes repeating.
std::vector<int64_t> broadcast_offsets(const std::vector<int64_t>& dims, const std::vector<int64_t>& out) {
  const size_t rank = out.size();
  std::vector<int64_t> padded(rank - dims.size(), 1);
  padded.insert(padded.end(), dims.begin(), dims.end());
  std::vector<int64_t> stride(rank, 0);
  int64_t step = 1;
  for (size_t d = rank; d-- > 0;) {
    stride[d] = padded[d] == 1 ? 0 : step;
    step *= padded[d];
  }
  const int64_t n = shape_numel(out);
  std::vector<int64_t> offsets(static_cast<size_t>(n));
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += idx[d] * stride[d];
    offsets[static_cast<size_t>(i)] = off;
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return offsets;
}

// Copies elements of `in` picked by `offsets` into a new tensor of `dims`.
HostTensor pick_elements(const HostTensor& in, std::vector<int64_t> dims, const std::vector<int64_t>& offsets) {
  const size_t es = elem_type_size(in.type);
  std::vector<uint8_t> out(offsets.size() * es);
  for (size_t i = 0; i < offsets.size(); ++i) {
    std::memcpy(out.data() + i * es, in.bytes.data() + static_cast<size_t>(offsets[i]) * es, es);
  }
  return HostTensor::owned(in.type, std::move(dims), std::move(out));
}

bool is_integer(ElemType t) {
  return t == ElemType::kInt64 || t == ElemType::kInt32 || t == ElemType::kInt16 || t == ElemType::kInt8 ||
         t == ElemType::kUint8 || t == ElemType::kUint16 || t == ElemType::kUint32 || t == ElemType::kUint64;
}

// The remainder of x / y with the sign of x; integers by −1 give 0 (x / y may overflow).
template <typename T>
T fold_remainder(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    return y == -1 ? 0 : x % y;
  } else {
    return std::fmod(x, y);
  }
}

// r[i] = va[oa[i]] ∘ vb[ob[i]] (comparisons give 0 or 1); integers divide truncating, by zero never.
template <typename T>
Result<std::vector<T>> apply_binary(FoldBinary op, const std::vector<T>& va, const std::vector<T>& vb,
                                    const std::vector<int64_t>& oa, const std::vector<int64_t>& ob) {
  std::vector<T> r(oa.size());
  for (size_t i = 0; i < r.size(); ++i) {
    const T x = va[static_cast<size_t>(oa[i])], y = vb[static_cast<size_t>(ob[i])];
    switch (op) {
      case FoldBinary::kAdd:
        r[i] = x + y;
        break;
      case FoldBinary::kSub:
        r[i] = x - y;
        break;
      case FoldBinary::kMul:
        r[i] = x * y;
        break;
      case FoldBinary::kDiv:
        if constexpr (std::is_integral_v<T>) {
          if (y == 0) return invalid_argument("integer division by zero in shape arithmetic");
        }
        r[i] = x / y;
        break;
      case FoldBinary::kMod:
      case FoldBinary::kFmod:
        if constexpr (std::is_integral_v<T>) {
          if (y == 0) return invalid_argument("integer remainder by zero in shape arithmetic");
        }
        r[i] = fold_remainder(x, y);
        if (op == FoldBinary::kMod && r[i] != 0 && (r[i] < 0) != (y < 0)) r[i] += y;
        break;
      case FoldBinary::kEqual:
        r[i] = x == y;
        break;
      case FoldBinary::kLess:
        r[i] = x < y;
        break;
      case FoldBinary::kGreater:
        r[i] = x > y;
        break;
      case FoldBinary::kLessOrEqual:
        r[i] = x <= y;
        break;
      case FoldBinary::kGreaterOrEqual:
        r[i] = x >= y;
        break;
      case FoldBinary::kAnd:
        r[i] = x != 0 && y != 0;
        break;
      case FoldBinary::kOr:
        r[i] = x != 0 || y != 0;
        break;
      case FoldBinary::kXor:
        r[i] = (x != 0) != (y != 0);
        break;
    }
  }
  return r;
}

}  // namespace

Result<std::vector<int64_t>> broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return invalid_argument("shapes do not broadcast: axis " + std::to_string(i) + " is " + std::to_string(da) +
                              " and " + std::to_string(db));
    }
    out[i] = da == 1 ? db : da;
  }
  int64_t n = 1;
  for (int64_t d : out) {
    if (d < 0 || (d != 0 && n > kMaxFoldElements / d)) {
      return invalid_argument("a folded tensor of more than 2^26 elements (" + std::to_string(d) + " on one axis)");
    }
    n *= d;
  }
  return out;
}

Result<HostTensor> fold_binary(FoldBinary op, const HostTensor& a, const HostTensor& b) {
  if (a.type != b.type) {
    return invalid_argument(std::string("operand types differ: ") + elem_type_name(a.type) + " and " +
                            elem_type_name(b.type));
  }
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> dims, broadcast_dims(a.dims, b.dims));
  const std::vector<int64_t> oa = broadcast_offsets(a.dims, dims), ob = broadcast_offsets(b.dims, dims);
  const bool to_bool = op >= FoldBinary::kEqual;
  const ElemType out_type = to_bool ? ElemType::kBool : a.type;
  if (is_integer(a.type)) {
    RECON_ASSIGN_OR_RETURN(std::vector<int64_t> va, host_int64s(a));
    RECON_ASSIGN_OR_RETURN(std::vector<int64_t> vb, host_int64s(b));
    RECON_ASSIGN_OR_RETURN(std::vector<int64_t> r, apply_binary(op, va, vb, oa, ob));
    if (out_type == ElemType::kInt64) return make_int64_tensor(std::move(dims), r);
    std::vector<double> d(r.begin(), r.end());
    return make_tensor(out_type, std::move(dims), d);
  }
  RECON_ASSIGN_OR_RETURN(std::vector<double> va, host_doubles(a));
  RECON_ASSIGN_OR_RETURN(std::vector<double> vb, host_doubles(b));
  RECON_ASSIGN_OR_RETURN(std::vector<double> r, apply_binary(op, va, vb, oa, ob));
  return make_tensor(out_type, std::move(dims), r);
}

Result<HostTensor> fold_cast(const HostTensor& in, ElemType to) {
  if (is_integer(in.type) && to == ElemType::kInt64) {
    RECON_ASSIGN_OR_RETURN(std::vector<int64_t> v, host_int64s(in));
    return make_int64_tensor(in.dims, v);
  }
  RECON_ASSIGN_OR_RETURN(std::vector<double> v, host_doubles(in));
  if (is_integer(to)) {
    for (double& x : v) x = std::trunc(x);
  }
  return make_tensor(to, in.dims, v);
}

Result<HostTensor> fold_float_class(const HostTensor& in, bool nan, bool positive_inf, bool negative_inf) {
  if (is_integer(in.type) || in.type == ElemType::kBool) {
    return invalid_argument(std::string("IsNaN and IsInf take floats, not ") + elem_type_name(in.type));
  }
  RECON_ASSIGN_OR_RETURN(std::vector<double> v, host_doubles(in));
  for (double& x : v) {
    x = (nan && std::isnan(x)) || (positive_inf && x == HUGE_VAL) || (negative_inf && x == -HUGE_VAL) ? 1.0 : 0.0;
  }
  return make_tensor(ElemType::kBool, in.dims, v);
}

Result<HostTensor> fold_concat(std::span<const HostTensor* const> inputs, int64_t axis) {
  if (inputs.empty()) return invalid_argument("concat of nothing");
  const HostTensor& first = *inputs[0];
  const int64_t rank = static_cast<int64_t>(first.dims.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return invalid_argument("concat axis out of range");
  std::vector<int64_t> dims = first.dims;
  dims[static_cast<size_t>(axis)] = 0;
  for (const HostTensor* t : inputs) {
    if (t->type != first.type || t->dims.size() != first.dims.size()) {
      return invalid_argument("concat inputs differ in type or rank");
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && t->dims[static_cast<size_t>(d)] != first.dims[static_cast<size_t>(d)]) {
        return invalid_argument("concat inputs differ off the axis");
      }
    }
    dims[static_cast<size_t>(axis)] += t->dims[static_cast<size_t>(axis)];
  }
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[static_cast<size_t>(d)];
  const size_t es = elem_type_size(first.type);
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(shape_numel(dims)) * es);
  for (int64_t o = 0; o < outer; ++o) {
    for (const HostTensor* t : inputs) {
      const size_t block = static_cast<size_t>(t->numel() / std::max<int64_t>(outer, 1)) * es;
      const uint8_t* src = t->bytes.data() + static_cast<size_t>(o) * block;
      out.insert(out.end(), src, src + block);
    }
  }
  return HostTensor::owned(first.type, std::move(dims), std::move(out));
}

Result<HostTensor> fold_slice(const HostTensor& in, std::span<const int64_t> starts, std::span<const int64_t> ends,
                              std::span<const int64_t> steps) {
  const size_t rank = in.dims.size();
  std::vector<int64_t> dims(rank), stride(rank);
  int64_t step_bytes = 1;
  for (size_t d = rank; d-- > 0;) {
    stride[d] = step_bytes;
    step_bytes *= in.dims[d];
  }
  for (size_t d = 0; d < rank; ++d) {
    const int64_t len = steps[d] > 0 ? (ends[d] - starts[d] + steps[d] - 1) / steps[d]
                                     : (starts[d] - ends[d] - steps[d] - 1) / -steps[d];
    dims[d] = std::max<int64_t>(len, 0);
  }
  const int64_t n = shape_numel(dims);
  std::vector<int64_t> offsets(static_cast<size_t>(n));
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += (starts[d] + idx[d] * steps[d]) * stride[d];
    offsets[static_cast<size_t>(i)] = off;
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return pick_elements(in, std::move(dims), offsets);
}

Result<HostTensor> fold_transpose(const HostTensor& in, std::span<const int> perm) {
  const size_t rank = in.dims.size();
  const std::vector<int64_t> stride = strides_of(in.dims);
  std::vector<int64_t> dims(rank);
  for (size_t d = 0; d < rank; ++d) dims[d] = in.dims[static_cast<size_t>(perm[d])];
  const int64_t n = shape_numel(dims);
  std::vector<int64_t> offsets(static_cast<size_t>(n));
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += idx[d] * stride[static_cast<size_t>(perm[d])];
    offsets[static_cast<size_t>(i)] = off;
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return pick_elements(in, std::move(dims), offsets);
}

Result<HostTensor> fold_gather_elements(const HostTensor& data, const HostTensor& indices, int64_t axis) {
  const size_t rank = data.dims.size();
  if (indices.dims.size() != rank || axis < 0 || axis >= static_cast<int64_t>(rank)) {
    return invalid_argument("GatherElements: data and indices must have one rank and the axis be in it");
  }
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> idx, host_int64s(indices));
  const int64_t len = data.dims[static_cast<size_t>(axis)];
  std::vector<int64_t> offsets(idx.size());
  for (size_t e = 0; e < idx.size(); ++e) {
    int64_t rem = static_cast<int64_t>(e), src = 0, stride = 1;
    for (size_t d = rank; d-- > 0;) {
      int64_t c = rem % indices.dims[d];
      rem /= indices.dims[d];
      if (static_cast<int64_t>(d) == axis) {
        c = idx[e] < 0 ? idx[e] + len : idx[e];
        if (c < 0 || c >= len)
          return invalid_argument("GatherElements: index " + std::to_string(idx[e]) + " out of range");
      } else if (c >= data.dims[d]) {
        return invalid_argument("GatherElements: the indices outgrow the data off the axis");
      }
      src += c * stride;
      stride *= data.dims[d];
    }
    offsets[e] = src;
  }
  return pick_elements(data, indices.dims, offsets);
}

Result<HostTensor> fold_trilu(const HostTensor& in, int64_t k, bool upper) {
  const size_t esz = elem_type_size(in.type);
  if (in.dims.size() < 2 || esz == 0) return invalid_argument("Trilu needs a numeric tensor of rank 2 or more");
  const int64_t rows = in.dims[in.dims.size() - 2], cols = in.dims.back(), n = in.numel();
  std::vector<uint8_t> data(in.bytes.begin(), in.bytes.end());
  for (int64_t e = 0; e < n; ++e) {
    const int64_t j = e % cols, i = (e / cols) % rows;
    if (!(upper ? j - i >= k : j - i <= k)) std::fill_n(data.begin() + e * static_cast<int64_t>(esz), esz, 0);
  }
  return HostTensor::owned(in.type, in.dims, std::move(data));
}

Result<HostTensor> fold_gather(const HostTensor& data, const HostTensor& indices, int64_t axis) {
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return invalid_argument("gather axis out of range");
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> idx, host_int64s(indices));
  const int64_t len = data.dims[static_cast<size_t>(axis)];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.dims[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= data.dims[static_cast<size_t>(d)];
  std::vector<int64_t> dims(data.dims.begin(), data.dims.begin() + axis);
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  if (outer * static_cast<int64_t>(idx.size()) > kMaxFoldElements / std::max<int64_t>(inner, 1)) {
    return invalid_argument("a folded Gather of more than 2^26 elements");
  }
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(outer * static_cast<int64_t>(idx.size()) * inner));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k : idx) {
      if (k < 0) k += len;
      if (k < 0 || k >= len) return invalid_argument("gather index " + std::to_string(k) + " out of range");
      for (int64_t i = 0; i < inner; ++i) offsets.push_back((o * len + k) * inner + i);
    }
  }
  return pick_elements(data, std::move(dims), offsets);
}

Result<HostTensor> fold_where(const HostTensor& cond, const HostTensor& x, const HostTensor& y) {
  if (x.type != y.type) return invalid_argument("Where: x and y types differ");
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> dxy, broadcast_dims(x.dims, y.dims));
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> dims, broadcast_dims(cond.dims, dxy));
  const std::vector<int64_t> oc = broadcast_offsets(cond.dims, dims), ox = broadcast_offsets(x.dims, dims),
                             oy = broadcast_offsets(y.dims, dims);
  RECON_ASSIGN_OR_RETURN(std::vector<double> vc, host_doubles(cond));
  const size_t es = elem_type_size(x.type);
  std::vector<uint8_t> out(oc.size() * es);
  for (size_t i = 0; i < oc.size(); ++i) {
    const bool pick_x = vc[static_cast<size_t>(oc[i])] != 0.0;
    const uint8_t* src =
        pick_x ? x.bytes.data() + static_cast<size_t>(ox[i]) * es : y.bytes.data() + static_cast<size_t>(oy[i]) * es;
    std::memcpy(out.data() + i * es, src, es);
  }
  return HostTensor::owned(x.type, std::move(dims), std::move(out));
}

Result<HostTensor> fold_expand(const HostTensor& in, const std::vector<int64_t>& shape) {
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> dims, broadcast_dims(in.dims, shape));
  return pick_elements(in, dims, broadcast_offsets(in.dims, dims));
}

namespace {

// The row-major position of the tuple idx[at, at + k) among `dims` (negative from the end), or an
// error naming `op` where one is outside its axis.
Result<int64_t> tuple_position(const std::vector<int64_t>& idx, size_t at, std::span<const int64_t> dims,
                               const char* op) {
  int64_t lin = 0;
  for (size_t j = 0; j < dims.size(); ++j) {
    int64_t v = idx[at + j];
    if (v < 0) v += dims[j];
    if (v < 0 || v >= dims[j])
      return invalid_argument(std::string(op) + ": index " + std::to_string(idx[at + j]) + " out of range");
    lin = lin * dims[j] + v;
  }
  return lin;
}

// data with updates[i] applied to element dst[i], in order.
Result<HostTensor> apply_updates(const HostTensor& data, const HostTensor& updates, const std::vector<int64_t>& dst,
                                 std::string_view reduction) {
  if (updates.type != data.type) return invalid_argument("Scatter: updates must be of the data's type");
  if (reduction == "none") {  // bytes, exact for every type
    std::vector<uint8_t> out(data.bytes.begin(), data.bytes.end());
    const size_t es = elem_type_size(data.type);
    for (size_t i = 0; i < dst.size(); ++i) {
      std::memcpy(out.data() + static_cast<size_t>(dst[i]) * es, updates.bytes.data() + i * es, es);
    }
    return HostTensor::owned(data.type, data.dims, std::move(out));
  }
  RECON_ASSIGN_OR_RETURN(std::vector<double> v, host_doubles(data));
  RECON_ASSIGN_OR_RETURN(std::vector<double> u, host_doubles(updates));
  for (size_t i = 0; i < dst.size(); ++i) {
    double& o = v[static_cast<size_t>(dst[i])];
    if (reduction == "add") {
      o += u[i];
    } else if (reduction == "mul") {
      o *= u[i];
    } else if (reduction == "max") {
      o = std::max(o, u[i]);
    } else if (reduction == "min") {
      o = std::min(o, u[i]);
    } else {
      return invalid_argument("Scatter: reduction '" + std::string(reduction) + "'");
    }
  }
  return make_tensor(data.type, data.dims, v);
}

}  // namespace

Result<HostTensor> fold_gather_nd(const HostTensor& data, const HostTensor& indices, int64_t batch_dims) {
  const std::vector<int64_t>& s = data.dims;
  const std::vector<int64_t>& is = indices.dims;
  const int64_t b = batch_dims;
  if (is.empty() || b < 0 || b >= static_cast<int64_t>(is.size()) || is.back() < 1 ||
      b + is.back() > static_cast<int64_t>(s.size())) {
    return invalid_argument("GatherND: indices " + shape_string(is) + " do not address data " + shape_string(s));
  }
  const size_t k = static_cast<size_t>(is.back());
  int64_t batch = 1, slots = 1, inner = 1;
  for (size_t d = 0; d < static_cast<size_t>(b); ++d) {
    if (is[d] != s[d]) return invalid_argument("GatherND: the batch axes of data and indices differ");
    batch *= s[d];
  }
  const std::span<const int64_t> addressed(s.data() + b, k);
  for (int64_t d : addressed) slots *= d;
  for (size_t d = static_cast<size_t>(b) + k; d < s.size(); ++d) inner *= s[d];
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> idx, host_int64s(indices));
  std::vector<int64_t> dims(is.begin(), is.end() - 1);
  dims.insert(dims.end(), s.begin() + b + static_cast<int64_t>(k), s.end());
  const size_t rows = idx.size() / k;
  const size_t per_batch = rows / static_cast<size_t>(std::max<int64_t>(batch, 1));
  std::vector<int64_t> offsets;
  offsets.reserve(rows * static_cast<size_t>(inner));
  for (size_t row = 0; row < rows; ++row) {
    RECON_ASSIGN_OR_RETURN(const int64_t slot, tuple_position(idx, row * k, addressed, "GatherND"));
    const int64_t base = (static_cast<int64_t>(row / per_batch) * slots + slot) * inner;
    for (int64_t i = 0; i < inner; ++i) offsets.push_back(base + i);
  }
  return pick_elements(data, std::move(dims), offsets);
}

Result<HostTensor> fold_scatter_elements(const HostTensor& data, const HostTensor& indices, const HostTensor& updates,
                                         int64_t axis, std::string_view reduction) {
  const size_t rank = data.dims.size();
  if (indices.dims.size() != rank || updates.dims != indices.dims || axis < 0 || axis >= static_cast<int64_t>(rank)) {
    return invalid_argument("ScatterElements: indices and updates of one shape and data's rank, the axis in it");
  }
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> idx, host_int64s(indices));
  const std::vector<int64_t> stride = strides_of(data.dims);
  std::vector<int64_t> dst(idx.size());
  for (size_t u = 0; u < idx.size(); ++u) {
    int64_t rem = static_cast<int64_t>(u), at = 0;
    for (size_t d = rank; d-- > 0;) {
      int64_t c = rem % indices.dims[d];
      rem /= indices.dims[d];
      if (static_cast<int64_t>(d) == axis) {
        RECON_ASSIGN_OR_RETURN(c, tuple_position(idx, u, std::span(&data.dims[d], 1), "ScatterElements"));
      } else if (c >= data.dims[d]) {
        return invalid_argument("ScatterElements: the indices outgrow the data off the axis");
      }
      at += c * stride[d];
    }
    dst[u] = at;
  }
  return apply_updates(data, updates, dst, reduction);
}

Result<HostTensor> fold_scatter_nd(const HostTensor& data, const HostTensor& indices, const HostTensor& updates,
                                   std::string_view reduction) {
  const std::vector<int64_t>& s = data.dims;
  const std::vector<int64_t>& is = indices.dims;
  if (is.empty() || is.back() < 1 || is.back() > static_cast<int64_t>(s.size())) {
    return invalid_argument("ScatterND: indices " + shape_string(is) + " do not address data " + shape_string(s));
  }
  const size_t k = static_cast<size_t>(is.back());
  std::vector<int64_t> want(is.begin(), is.end() - 1);
  want.insert(want.end(), s.begin() + static_cast<int64_t>(k), s.end());
  if (updates.dims != want) return invalid_argument("ScatterND: updates must be " + shape_string(want));
  int64_t inner = 1;
  for (size_t d = k; d < s.size(); ++d) inner *= s[d];
  RECON_ASSIGN_OR_RETURN(std::vector<int64_t> idx, host_int64s(indices));
  std::vector<int64_t> dst;
  dst.reserve(idx.size() / k * static_cast<size_t>(inner));
  for (size_t t = 0; t < idx.size() / k; ++t) {
    RECON_ASSIGN_OR_RETURN(const int64_t slot, tuple_position(idx, t * k, std::span(s.data(), k), "ScatterND"));
    for (int64_t i = 0; i < inner; ++i) dst.push_back(slot * inner + i);
  }
  return apply_updates(data, updates, dst, reduction);
}

Result<HostTensor> fold_cumsum(const HostTensor& in, int64_t axis, bool exclusive, bool reverse) {
  if (axis < 0 || axis >= static_cast<int64_t>(in.dims.size())) return invalid_argument("CumSum: axis out of range");
  RECON_ASSIGN_OR_RETURN(std::vector<double> v, host_doubles(in));
  const int64_t len = in.dims[static_cast<size_t>(axis)], inner = strides_of(in.dims)[static_cast<size_t>(axis)];
  std::vector<double> out(v.size());
  const int64_t lines = len == 0 ? 0 : static_cast<int64_t>(v.size()) / len;
  for (int64_t line = 0; line < lines; ++line) {
    const int64_t base = line / inner * len * inner + line % inner;
    double sum = 0;
    for (int64_t j = 0; j < len; ++j) {
      const size_t at = static_cast<size_t>(base + (reverse ? len - 1 - j : j) * inner);
      if (exclusive) out[at] = sum;
      sum += v[at];
      if (!exclusive) out[at] = sum;
    }
  }
  return make_tensor(in.type, in.dims, out);
}

}  // namespace recon::gpu::onnx
