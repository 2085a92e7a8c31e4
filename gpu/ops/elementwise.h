// Elementwise ops with NumPy broadcasting: binary arithmetic out = a ∘ b for ∘ ∈ {+, −, ×, ÷, max,
// min, pow, prelu, mod, fmod}, comparisons (=, <, >, ≤, ≥) and logic (and, or, xor) into booleans, and Where,
// a select of three operands. (The runtime's same-shape `ops::add` in elementwise_basic.h stays;
// this is the general form.)
//
// Booleans are i32 words holding 0 or 1 (ONNX's bool on the device); logic and Where take any
// non-zero word as true.
//
// Broadcasting: shapes are aligned at their last axis; a missing or size-1 axis of one operand
// repeats along the other's (scalars are shape [] or [1]). out must have exactly the broadcast
// shape. Any rank works as long as at most 6 independent axes remain after merging axes that are
// contiguous in every operand (a bias [C] over [B, N, C] merges to 2 axes). Equal shapes take a
// fast path without index arithmetic. Arithmetic: a, b and out share one dtype, f32 or f16 (fp32
// arithmetic), or i32 for add, sub, mul, div (truncating toward zero; by zero: 0), max, min, mod and
// fmod (by zero: 0) in integer arithmetic, wrapping on overflow. out may be the same tensor as a or b when that operand
// has out's shape (in-place).
//
// Large tensors: operands over max_binding_bytes() (layout.h) are split along the leading axis of out
// (leading size-1 axes dropped first); an operand broadcast along that axis is bound whole and
// must itself fit one binding. Equal shapes are split as flat ranges.
//
// Tolerance (tests/gpu/ops/elementwise_test.cpp): one fp32 rounding, ≤ 1e-6 relative (add/sub
// relative to |a| + |b|); fp16 storage adds the output rounding, ≤ 1e-3 relative. Float mod and
// fmod are exact where |a / b| < 2^24 (within one rounding of b where the fp32 quotient rounds up to
// the next integer; tested within 1e-6·|b|). Integer
// arithmetic, comparisons, logic and Where are exact.
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
  // Comparisons: a and b of one dtype (f32, f16 or i32), out i32 0 or 1. A NaN operand compares
  // false, Equal included.
  kEqual = 8,
  kLess = 9,
  kGreater = 10,
  kLessOrEqual = 11,
  kGreaterOrEqual = 12,
  // Logic of booleans: a, b and out i32.
  kAnd = 13,
  kOr = 14,
  kXor = 15,
  // Remainders of a / b: kMod takes the sign of b (Python's %, NumPy's mod), kFmod the sign of a
  // (C's fmod and %). Floats: NaN for b = 0; integers: 0 for b = 0.
  kMod = 16,
  kFmod = 17,
  // Shifts of i32 operands as unsigned 32-bit words (zeros shifted in); a shift by 32 or more, or
  // by a negative amount, gives 0.
  kShiftLeft = 18,
  kShiftRight = 19,
};

// Comparisons (out i32 booleans from operands of any dtype) and logic (booleans into booleans).
inline bool is_comparison_op(BinaryOp op) {
  return op >= BinaryOp::kEqual && op <= BinaryOp::kGreaterOrEqual;
}
inline bool is_logic_op(BinaryOp op) {
  return op >= BinaryOp::kAnd && op <= BinaryOp::kXor;
}

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

// out = cond ≠ 0 ? x : y (ONNX Where), the three broadcast to out's shape as above: cond i32, x, y
// and out of one dtype (f32, f16 or i32). It moves elements and never computes, so inf, NaN and
// every integer pass unchanged.
Status where(Graph& g, const Arg& cond, const Arg& x, const Arg& y, const Arg& out);

// The broadcast shape of a and b, or INVALID_ARGUMENT when they are incompatible.
Result<Shape> broadcast_shape(const Shape& a, const Shape& b);

}  // namespace recon::gpu::ops
