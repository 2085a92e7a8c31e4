// Elementwise binary arithmetic with NumPy broadcasting: out = a ∘ b for ∘ ∈ {+, −, ×, ÷, max, min,
// pow, prelu}.
// (The runtime's same-shape `ops::add` in elementwise_basic.h stays; this is the general form.)
//
// Broadcasting: shapes are aligned at their last axis; a missing or size-1 axis of one operand
// repeats along the other's (scalars are shape [] or [1]). out must have exactly the broadcast
// shape. Any rank works as long as at most 6 independent axes remain after merging axes that are
// contiguous in every operand (a bias [C] over [B, N, C] merges to 2 axes). Equal shapes take a
// fast path without index arithmetic. a, b and out share one dtype, f32 or f16 (fp32 arithmetic),
// or i32 for add, sub, mul, div (truncating toward zero; by zero: 0), max and min in integer
// arithmetic, wrapping on overflow. out may be the same tensor as a or b when that operand has out's
// shape (in-place).
//
// Large tensors: operands over max_binding_bytes() (layout.h) are split along the leading axis of out
// (leading size-1 axes dropped first); an operand broadcast along that axis is bound whole and
// must itself fit one binding. Equal shapes are split as flat ranges.
//
// Tolerance (tests/gpu/ops/elementwise_test.cpp): one fp32 rounding, ≤ 1e-6 relative (add/sub
// relative to |a| + |b|); fp16 storage adds the output rounding, ≤ 1e-3 relative.
#pragma once

#include <cstdint>

#include "gpu/graph.h"

namespace recon::gpu::ops {

// The order is the shader's OP specialisation constant (shaders/binary.comp).
enum class BinaryOp : uint32_t {
  kAdd = 0,
  kSub = 1,
  kMul = 2,
  kDiv = 3,
  kMax = 4,  // GLSL max/min: which operand a NaN yields is unspecified
  kMin = 5,
  kPow = 6,    // a^b; a negative base takes integer exponents only (NaN otherwise), as in NumPy
  kPRelu = 7,  // a < 0 ? b·a : a (ONNX PRelu, b the slope)
};

Status binary(Graph& g, BinaryOp op, const Arg& a, const Arg& b, const Arg& out);
inline Status binary_add(Graph& g, const Arg& a, const Arg& b, const Arg& out) {
  return binary(g, BinaryOp::kAdd, a, b, out);
}
inline Status binary_sub(Graph& g, const Arg& a, const Arg& b, const Arg& out) {
  return binary(g, BinaryOp::kSub, a, b, out);
}
inline Status binary_mul(Graph& g, const Arg& a, const Arg& b, const Arg& out) {
  return binary(g, BinaryOp::kMul, a, b, out);
}
inline Status binary_div(Graph& g, const Arg& a, const Arg& b, const Arg& out) {
  return binary(g, BinaryOp::kDiv, a, b, out);
}

// The broadcast shape of a and b, or INVALID_ARGUMENT when they are incompatible.
Result<Shape> broadcast_shape(const Shape& a, const Shape& b);

}  // namespace recon::gpu::ops
