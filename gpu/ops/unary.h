// Elementwise unary functions y = f(α·x + β) on f32 or f16 tensors (fp32 arithmetic):
// ReLU, sigmoid, tanh, GELU (exact erf form and tanh form), exp, the plain affine map
// y = α·x + β ("scale_shift"), and the ONNX functions after them in UnaryOp (two of which take
// parameters γ, δ). GLSL has no erf: shaders/unary_math.glsl carries an fp32 erfc
// (Chebyshev fit, fractional error < 1.2e-7) used through Φ(x) = ½·erfc(−x/√2) with x²/2 formed
// exactly, so both tails of GELU keep their relative accuracy, and an exp with Cody–Waite range
// reduction (the builtin is only specified to 3 + 2|x| ulp). tanh and sigmoid avoid inf/inf and
// cancellation.
//
// in and out have one shape and dtype; out may be in (in-place). Tensors over max_binding_bytes()
// (layout.h) are processed in flat ranges, one dispatch each.
//
// Tolerances (tests/gpu/ops/unary_test.cpp), error relative to |want| + 1e-3, against float64:
//   fp32: relu and scale_shift one rounding; sigmoid, tanh, exp, both GELUs ≤ 2e-6 (measured
//         2–7e-7 on lavapipe and on an H100). GELU (erf) on a dense grid over [−10, 10]: absolute
//         error ≤ 3e-7·max(|x|, 1) (measured 1.5e-7), relative ≤ 2e-6 for |x| ≤ 5 (1.4e-6) and
//         ≤ 1e-5 down to GELU(−10) ≈ −8e−23 (4.4e-6).
//   fp16 storage: ≤ 1e-3 (the output rounding, measured ≤ 4.8e-4).
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
  kErf = 7,
  kSqrt = 8,
  kReciprocal = 9,
  kAbs = 10,
  kLog = 11,
  kPow = 12,        // x^γ (a negative base takes integer exponents only, as in NumPy)
  kLeakyRelu = 13,  // x ≥ 0 ? x : γ·x
  kClip = 14,       // min(max(x, γ), δ); ONNX HardSigmoid is clip(α·x + β, 0, 1)
  kHardSwish = 15,  // x·clip(x/6 + ½, 0, 1)
  kElu = 16,        // x > 0 ? x : γ·(eˣ − 1)
  kSoftplus = 17,   // log(1 + eˣ), without overflow
  kFloor = 18,
  kCeil = 19,
  kSin = 20,
  kCos = 21,
  kSign = 22,
  kRound = 23,            // half to even
  kSelu = 24,             // γ·(x > 0 ? x : δ·(eˣ − 1))
  kSoftsign = 25,         // x / (1 + |x|)
  kThresholdedRelu = 26,  // x > γ ? x : 0
  kTan = 27,
  kAsin = 28,
  kAcos = 29,
  kAtan = 30,
  kSinh = 31,
  kCosh = 32,
  kAsinh = 33,
  kAcosh = 34,
  kAtanh = 35,
  kCelu = 36,    // max(0, x) + min(0, γ·(e^(x/γ) − 1))
  kShrink = 37,  // x < −γ ? x + δ : x > γ ? x − δ : 0
};

// y = f(alpha·x + beta), with the op's parameters gamma and delta. (The wrappers below avoid the
// names tanh/exp so that unqualified math calls elsewhere in namespace ops keep finding std's.)
Status unary(Graph& g, UnaryOp op, const Arg& in, const Arg& out, float alpha = 1.0f, float beta = 0.0f,
             float gamma = 0.0f, float delta = 0.0f);

inline Status relu(Graph& g, const Arg& in, const Arg& out) {
  return unary(g, UnaryOp::kRelu, in, out);
}
inline Status sigmoid(Graph& g, const Arg& in, const Arg& out) {
  return unary(g, UnaryOp::kSigmoid, in, out);
}
inline Status tanh_activation(Graph& g, const Arg& in, const Arg& out) {
  return unary(g, UnaryOp::kTanh, in, out);
}
inline Status gelu(Graph& g, const Arg& in, const Arg& out) {
  return unary(g, UnaryOp::kGeluErf, in, out);
}
inline Status gelu_tanh(Graph& g, const Arg& in, const Arg& out) {
  return unary(g, UnaryOp::kGeluTanh, in, out);
}
inline Status exp_elementwise(Graph& g, const Arg& in, const Arg& out) {
  return unary(g, UnaryOp::kExp, in, out);
}
inline Status scale_shift(Graph& g, const Arg& in, const Arg& out, float scale, float shift) {
  return unary(g, UnaryOp::kIdentity, in, out, scale, shift);
}

}  // namespace recon::gpu::ops
