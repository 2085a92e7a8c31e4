// The operands of a GEMM convolution test (conv2d, conv2d_nhwc), uploaded from seeded random values
// and read back as the dtype stored them, for a float64 reference.
#pragma once

#include <optional>
#include <vector>

#include "gpu/ops/matmul.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu::testing {

struct ConvOperands {
  Tensor in, wt, out;
  std::optional<Tensor> bias, residual;
  std::vector<float> host_in, host_w, host_bias, host_residual;  // empty where there is none

  std::optional<Arg> bias_arg() const { return bias ? std::optional<Arg>(*bias) : std::nullopt; }
  ops::Epilogue epilogue(ops::Activation act, bool residual_first) const {
    ops::Epilogue ep;
    ep.activation = act;
    if (residual) ep.residual = *residual;
    ep.residual_first = residual_first;
    return ep;
  }
};

// Weights in [−0.5, 0.5], the rest in [−1, 1]; a bias of w_shape[0] values; `residual` 0 for none,
// 1 for a tensor of its own, 2 for the output itself (which then starts random, not poisoned).
inline ConvOperands conv_operands(Runtime& rt, DType d, const Shape& in_shape, const Shape& w_shape,
                                  const Shape& out_shape, bool bias, int residual, uint32_t seed) {
  Tensor in = upload_f32(rt, d, in_shape, random_floats(shape_numel(in_shape), seed));
  Tensor wt = upload_f32(rt, d, w_shape, random_floats(shape_numel(w_shape), seed + 1, -0.5f, 0.5f));
  Tensor out = residual == 2 ? upload_f32(rt, d, out_shape, random_floats(shape_numel(out_shape), seed + 2))
                             : poisoned(rt, d, out_shape);
  std::optional<Tensor> tb, tr;
  if (bias) tb = upload_f32(rt, d, {w_shape[0]}, random_floats(w_shape[0], seed + 3));
  if (residual == 1) tr = upload_f32(rt, d, out_shape, random_floats(shape_numel(out_shape), seed + 4));
  if (residual == 2) tr = out;
  std::vector<float> hi = download_f32(rt, in), hw = download_f32(rt, wt);
  std::vector<float> hb = tb ? download_f32(rt, *tb) : std::vector<float>();
  std::vector<float> hr = tr ? download_f32(rt, *tr) : std::vector<float>();
  return ConvOperands{in, wt, out, tb, tr, std::move(hi), std::move(hw), std::move(hb), std::move(hr)};
}

}  // namespace recon::gpu::testing
