// Graph rewrites before compiling, each where the op library has the fused form:
//  - Conv → BatchNormalization with constant parameters: the normalisation folds into the
//    convolution's weights and bias at load (exact up to fp32 rounding);
//  - Conv → Add (the sum of the convolution and a tensor of its shape): the add becomes the
//    convolution's residual epilogue;
//  - MatMul → Add of a constant [N] vector: the add becomes the GEMM's bias;
//  - Conv / Gemm / MatMul → Relu, Sigmoid or Tanh: the activation becomes the GEMM's epilogue (after
//    a fused residual: act(conv + residual)).
// A producer is fused only into its single reader, never when its output is a graph output. The
// builders get the fused parts as internal attributes and inputs (kFused* below) and fall back to
// separate dispatches where shapes do not allow the epilogue.
#pragma once

#include <cstddef>

#include "gpu/models/onnx/onnx_model.h"

namespace recon::gpu::onnx {

// Internal attributes: the gpu::ops::Activation applied in the epilogue, and (on a Conv with a
// fused residual) 1 when it applies to the sum: act(conv + residual), ResNet's ReLU after the add.
inline constexpr const char* kFusedActivation = "recon.activation";
inline constexpr const char* kFusedResidualFirst = "recon.residual_first";
// Input indices of fused tensors: a Conv's residual, a MatMul's bias.
inline constexpr size_t kConvResidualInput = 3;
inline constexpr size_t kMatMulBiasInput = 2;

struct FusionCounts {
  size_t batch_norms = 0, residuals = 0, biases = 0, activations = 0;
};

FusionCounts fuse_graph(Model& model);

}  // namespace recon::gpu::onnx
