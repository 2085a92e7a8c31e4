// Elementwise unary functions y = f(α·x + β) on f32 or f16 tensors (fp32 arithmetic):
// ReLU, sigmoid, tanh, GELU (exact erf form and tanh form), exp, and the plain affine map
// y = α·x + β ("scale_shift"). GLSL has no erf: shaders/unary_math.glsl carries an fp32 erfc
// (Chebyshev fit, fractional error < 1.2e-7) used through Φ(x) = ½·erfc(−x/√2), so both tails of
// GELU keep their relative accuracy. tanh and sigmoid are written to avoid inf/inf and cancellation.
//
// in and out have one shape and dtype; out may be in (in-place). Tensors over kMaxBindingBytes
// (layout.h) are processed in flat ranges, one dispatch each.
//
// Tolerances (tests/gpu/ops/unary_test.cpp), error relative to |want| + 1e-3, against float64:
//   fp32: relu/scale_shift exact to one rounding (1e-7); sigmoid, tanh, exp ≤ 2e-6;
//         GELU erf ≤ 2e-6 (the erf itself ≤ 1e-6 absolute); GELU tanh ≤ 2e-6.
//   fp16 storage: ≤ 1e-3 (the output rounding).
#pragma once

#include <cstdint>

#include "gpu/graph.h"

namespace recon::gpu::ops {

// The order is the shader's OP specialisation constant (shaders/unary.comp).
enum class UnaryOp : uint32_t {
  kIdentity = 0,  // y = α·x + β
  kRelu = 1,
  kSigmoid = 2,
  kTanh = 3,
  kGeluErf = 4,   // PyTorch nn.GELU() (approximate='none'), MASt3R's MLPs
  kGeluTanh = 5,  // nn.GELU(approximate='tanh')
  kExp = 6,
};

// y = f(alpha·x + beta). (The wrappers below avoid the names tanh/exp so that unqualified math
// calls elsewhere in namespace ops keep finding std's.)
Status unary(Graph& g, UnaryOp op, const Arg& in, const Arg& out, float alpha = 1.0f, float beta = 0.0f);

inline Status relu(Graph& g, const Arg& in, const Arg& out) { return unary(g, UnaryOp::kRelu, in, out); }
inline Status sigmoid(Graph& g, const Arg& in, const Arg& out) { return unary(g, UnaryOp::kSigmoid, in, out); }
inline Status tanh_activation(Graph& g, const Arg& in, const Arg& out) { return unary(g, UnaryOp::kTanh, in, out); }
inline Status gelu(Graph& g, const Arg& in, const Arg& out) { return unary(g, UnaryOp::kGeluErf, in, out); }
inline Status gelu_tanh(Graph& g, const Arg& in, const Arg& out) { return unary(g, UnaryOp::kGeluTanh, in, out); }
inline Status exp_elementwise(Graph& g, const Arg& in, const Arg& out) { return unary(g, UnaryOp::kExp, in, out); }
inline Status scale_shift(Graph& g, const Arg& in, const Arg& out, float scale, float shift) {
  return unary(g, UnaryOp::kIdentity, in, out, scale, shift);
}

}  // namespace recon::gpu::ops
