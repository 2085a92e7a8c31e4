// The GEMM epilogue's activations (ops::Activation) in float64, the reference of the GEMM-based ops'
// tests (matmul, linear, conv2d, conv2d_nhwc).
#pragma once

#include <cmath>
#include <numbers>

#include "gpu/ops/matmul.h"

namespace recon::gpu::testing {

inline double activation_reference(double v, ops::Activation a) {
  switch (a) {
    case ops::Activation::kNone:
      return v;
    case ops::Activation::kRelu:
      return v > 0 ? v : 0;
    case ops::Activation::kGeluErf:
      return 0.5 * v * std::erfc(-v / std::sqrt(2.0));
    case ops::Activation::kGeluTanh: {  // 0.5·v·(1 + tanh(y)) without double's own cancellation
      const double y = std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v);
      return v / (1 + std::exp(-2 * y));
    }
    case ops::Activation::kSigmoid:
      return 1 / (1 + std::exp(-v));
    case ops::Activation::kTanh:
      return std::tanh(v);
  }
  return v;
}

}  // namespace recon::gpu::testing
