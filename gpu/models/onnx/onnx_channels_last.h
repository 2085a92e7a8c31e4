// A graph rewrite that runs convolutional stretches of a model channels-last (NHWC), the layout of
// gpu/ops/conv2d_nhwc.h, after fusion (onnx_fusion.h) and before compiling. ONNX's tensors are NCHW;
// in NCHW the tensor-core convolution gathers its operand element by element wherever a map's width
// is not a multiple of 8 (ResNet's 28×28, 14×14, 7×7), and each image is its own grid layer.
//  - A Conv becomes the same op in kChannelsLastDomain (input, residual and output NHWC, weights
//    [Cout, KH, KW, Cin]) when it is 2-D (a rank-4 weight, or kernel_shape of two), group 1, no
//    dilation, symmetric or VALID padding, and a fused residual (if any) is itself channels-last.
//    An initializer's permuted copy is made here; other weights (a Constant's, ConstantOfShape's as
//    ONNX's model-zoo exports have them) the builder permutes (kChannelsLastPlanarWeights).
//  - MaxPool / AveragePool (2-D, without Indices), GlobalAveragePool and GlobalMaxPool of a
//    channels-last input become their channels-last forms; element-wise ops whose activation inputs
//    are all channels-last (ReLU, Add...) stay as they are, on the permuted tensors.
//  - Transpose nodes enter the layout where a converted Conv of at least 8 input channels reads an
//    NCHW value; one of fewer (a network's stem: RGB) reads it as it is (kChannelsLastPlanarInput).
//    They leave it where an NCHW reader or a graph output needs a channels-last value back.
// Values keep their NCHW names for NCHW readers; a channels-last value is named
// kChannelsLastPrefix + its NCHW name.
#pragma once

#include <cstddef>
#include <string>

#include "gpu/models/onnx/onnx_model.h"

namespace recon::gpu::onnx {

// The domain of the channels-last forms: op types as ONNX names them, NHWC tensors. Files cannot use
// it (unsupported_nodes refuses other domains before this pass runs).
inline constexpr const char* kChannelsLastDomain = "recon.channels_last";
inline constexpr const char* kChannelsLastPrefix = "recon.nhwc:";
// Internal attributes of a channels-last Conv: 1 when its input is NCHW (ops::ConvInput::kPlanar);
// 1 when its weights are still [Cout, Cin, KH, KW] (not an initializer the rewrite could permute).
inline constexpr const char* kChannelsLastPlanarInput = "recon.planar_input";
inline constexpr const char* kChannelsLastPlanarWeights = "recon.planar_weights";
// Convolutions of fewer input channels than this read an NCHW input as it is, without a transpose:
// their loads gather single elements whatever the layout.
inline constexpr int64_t kChannelsLastMinTransposedChannels = 8;

struct ChannelsLastCounts {
  size_t convolutions = 0, pools = 0, elementwise = 0;
  size_t transposes = 0;     // into and out of the layout
  size_t planar_inputs = 0;  // convolutions reading an NCHW input as it is
};

ChannelsLastCounts convert_to_channels_last(Model& model);

// A rank-4 [O, I, KH, KW] host tensor's values as [O, KH, KW, I] (any element type).
HostTensor ohwi_copy(const HostTensor& w, std::string name = {});

}  // namespace recon::gpu::onnx
