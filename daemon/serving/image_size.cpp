// Official output-size arithmetic: see image_size.h. Mirrors tools/io/official_resize.cpp line by
// line; tests/daemon/server/image_input_test.cpp checks the two agree.
#include "daemon/serving/image_size.h"

#include <algorithm>
#include <cmath>

namespace recon::daemon {

Result<ImageSize> official_output_size(ImageSize input, uint32_t long_side, const CropRule& crop) {
  if (input.width == 0 || input.height == 0) return invalid_argument("image has a zero side");
  if (long_side < 16) return invalid_argument("model size must be at least 16");
  const double longest = std::max(input.width, input.height);
  const int w = static_cast<int>(std::nearbyint(input.width * static_cast<double>(long_side) / longest));
  const int h = static_cast<int>(std::nearbyint(input.height * static_cast<double>(long_side) / longest));
  const auto [halfw, halfh] = official_crop_halves(static_cast<uint32_t>(w), static_cast<uint32_t>(h), crop);
  if (halfw == 0 || halfh == 0) {
    return invalid_argument("a " + input.to_string() + " image is too small for the model's " +
                            std::to_string(crop.patch) + "-pixel patches at " + std::to_string(long_side) + " px");
  }
  return ImageSize{static_cast<uint32_t>(2 * halfh), static_cast<uint32_t>(2 * halfw)};
}

bool is_official_size(ImageSize input, uint32_t long_side, const CropRule& crop) {
  if (std::max(input.width, input.height) != long_side) return false;
  auto out = official_output_size(input, long_side, crop);
  return out.is_ok() && *out == input;
}

}  // namespace recon::daemon
