// Host evaluation of the ops that make up shape arithmetic (Shape → Gather → Unsqueeze → Concat →
// Reshape and friends), so that a graph's shapes are static once its input shapes are: these run
// at load time on small tensors, in double precision (exact for integers below 2^53; 64-bit
// integer inputs are handled as int64 where it matters).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "gpu/models/onnx/onnx_model.h"
#include "gpu/status.h"

namespace recon::gpu::onnx {

// The largest tensor folding makes (elements): shapes can come from a client's shape tensors, and
// the host must not be made to allocate without bound.
inline constexpr int64_t kMaxFoldElements = int64_t{1} << 26;
// ConstantOfShape's own bound: it fills in its element type, with no wider copy beside it, and
// models make whole weights with it (ONNX's `light` models: VGG-19's 102.8 M-float layer).
inline constexpr int64_t kMaxConstantOfShapeElements = int64_t{1} << 27;

// Arithmetic keeps the operands' type; comparisons and logic (operands non-zero or not) give bool.
enum class FoldBinary {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,   // the sign of the divisor (Python's %)
  kFmod,  // the sign of the dividend (C's fmod and %)
  kEqual,
  kLess,
  kGreater,
  kLessOrEqual,
  kGreaterOrEqual,
  kAnd,
  kOr,
  kXor
};

// NumPy broadcasting of two shapes, or INVALID_ARGUMENT (also beyond kMaxFoldElements).
Result<std::vector<int64_t>> broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

Result<HostTensor> fold_binary(FoldBinary op, const HostTensor& a, const HostTensor& b);
Result<HostTensor> fold_cast(const HostTensor& in, ElemType to);
// IsNaN (`nan`) or IsInf of the signs asked for, into bool; floating `in` only.
Result<HostTensor> fold_float_class(const HostTensor& in, bool nan, bool positive_inf, bool negative_inf);
Result<HostTensor> fold_concat(std::span<const HostTensor* const> inputs, int64_t axis);
// starts/ends/axes/steps already normalised: one entry per axis of `in` (step ≥ 1 or ≤ -1).
Result<HostTensor> fold_slice(const HostTensor& in, std::span<const int64_t> starts, std::span<const int64_t> ends,
                              std::span<const int64_t> steps);
// perm: a permutation of in's axes (out.dims[d] = in.dims[perm[d]]).
Result<HostTensor> fold_transpose(const HostTensor& in, std::span<const int> perm);
// Trilu: the elements outside the upper (j − i ≥ k) or lower (j − i ≤ k) triangle of the last two
// axes set to zero.
Result<HostTensor> fold_trilu(const HostTensor& in, int64_t k, bool upper);
Result<HostTensor> fold_gather(const HostTensor& data, const HostTensor& indices, int64_t axis);
// GatherElements: out[c] = data[c with c[axis] = indices[c]] (negative from the end; out of range
// refused).
Result<HostTensor> fold_gather_elements(const HostTensor& data, const HostTensor& indices, int64_t axis);
// GatherND: out is indices[:-1] + data[batch_dims + k:], each tuple of the indices' last axis (k
// of them, negative from the end, out of range refused) picking a slice of data.
Result<HostTensor> fold_gather_nd(const HostTensor& data, const HostTensor& indices, int64_t batch_dims);
// ScatterElements along `axis` and ScatterND: data with each update applied in the updates' order
// (`reduction` none, add, mul, max or min; out-of-range indices refused).
Result<HostTensor> fold_scatter_elements(const HostTensor& data, const HostTensor& indices, const HostTensor& updates,
                                         int64_t axis, std::string_view reduction);
Result<HostTensor> fold_scatter_nd(const HostTensor& data, const HostTensor& indices, const HostTensor& updates,
                                   std::string_view reduction);
// CumSum along `axis` (in double).
Result<HostTensor> fold_cumsum(const HostTensor& in, int64_t axis, bool exclusive, bool reverse);
Result<HostTensor> fold_where(const HostTensor& cond, const HostTensor& x, const HostTensor& y);
Result<HostTensor> fold_expand(const HostTensor& in, const std::vector<int64_t>& shape);

}  // namespace recon::gpu::onnx
