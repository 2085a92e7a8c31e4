#include "gpu/ops/conv_images.h"

#include <algorithm>
#include <string>

namespace recon::gpu::ops {

Result<int64_t> conv_images_per_dispatch(const Capabilities& caps, std::string_view op, const Arg& input,
                                         const Arg& weight, const Arg& out, const std::optional<Arg>& residual,
                                         ConvImageSizes sizes, int64_t batch, int64_t max_images) {
  const VkDeviceSize range = caps.max_storage_buffer_range;
  const int64_t esz = static_cast<int64_t>(dtype_size(out.dtype()));
  // A window starts up to one offset alignment before its first element.
  const int64_t usable = static_cast<int64_t>(range) -
                         static_cast<int64_t>(std::max<VkDeviceSize>(caps.min_storage_buffer_offset_alignment, 4));
  int64_t images = std::min(batch, max_images);
  if (input.bytes() > range) images = std::min(images, usable / std::max<int64_t>(sizes.in * esz, 1));
  if (out.bytes() > range || (residual && residual->bytes() > range)) {
    images = std::min(images, usable / std::max<int64_t>(sizes.out * esz, 1));
  }
  if (images < 1) {
    return invalid_argument(std::string(op) + ": one image of " + shape_string(out.shape()) +
                            " exceeds maxStorageBufferRange");
  }
  if (weight.bytes() > range) return invalid_argument(std::string(op) + ": weights exceed maxStorageBufferRange");
  return images;
}

Result<ConvImageWindows> conv_image_windows(const Capabilities& caps, const Arg& input, const Arg& out,
                                            const std::optional<Arg>& residual, ConvImageSizes sizes, int64_t first,
                                            int64_t count) {
  RECON_ASSIGN_OR_RETURN(GemmWindow in, gemm_window(caps, input, first * sizes.in, count * sizes.in));
  RECON_ASSIGN_OR_RETURN(GemmWindow o, gemm_window(caps, out, first * sizes.out, count * sizes.out));
  std::optional<GemmWindow> r;
  if (residual) {
    RECON_ASSIGN_OR_RETURN(GemmWindow window, gemm_window(caps, *residual, first * sizes.out, count * sizes.out));
    r = window;
  }
  return ConvImageWindows{in, o, r};
}

}  // namespace recon::gpu::ops
