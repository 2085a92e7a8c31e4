// The GEMM convolutions' (conv2d, conv2d_nhwc, conv_transpose2d) split of a batch into dispatches of
// whole images, so that the input's, the output's and the residual's windows each fit one binding
// (maxStorageBufferRange): how many images a dispatch takes, and the windows of each dispatch.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "gpu/capabilities.h"
#include "gpu/graph.h"
#include "gpu/ops/matmul.h"

namespace recon::gpu::ops {

// Elements per image of a convolution's input and output (and residual, shaped like the output).
struct ConvImageSizes {
  int64_t in = 0, out = 0;
};

// Images per dispatch: all `batch` (at most `max_images`) where the operands fit one binding, else
// as many as fit. INVALID_ARGUMENT naming `op` where one image, or the weights, do not.
Result<int64_t> conv_images_per_dispatch(const Capabilities& caps, std::string_view op, const Arg& input,
                                         const Arg& weight, const Arg& out, const std::optional<Arg>& residual,
                                         ConvImageSizes sizes, int64_t batch, int64_t max_images);

// The windows of images [first, first + count) of the input, the output and the residual.
struct ConvImageWindows {
  GemmWindow in, out;
  std::optional<GemmWindow> residual;
};
Result<ConvImageWindows> conv_image_windows(const Capabilities& caps, const Arg& input, const Arg& out,
                                            const std::optional<Arg>& residual, ConvImageSizes sizes, int64_t first,
                                            int64_t count);

}  // namespace recon::gpu::ops
