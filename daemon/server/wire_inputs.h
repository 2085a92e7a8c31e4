// Inputs of a wire request, checked on the I/O thread before a request queues:
//  accept_image — a verified wire::Image: geometry, bounds, format; the bytes leased in the client's
//                 registered region (bounds-checked by ShmRegistry) or copied out of the message;
//                 the model-input size decided (image_size.h). The GPU worker prepares it later
//                 (daemon/serving/image_input.h).
//  accept_tensor — a verified wire::TensorInput: element type, shape (rank ≤ 8, every dimension ≥ 1,
//                 bounded size) and bytes, leased or copied the same way.
// The serving core gets what these return and never sees the wire types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "daemon/ipc/shm_registry.h"
#include "daemon/serving/image_input.h"
#include "daemon/serving/tensor_input.h"
#include "gpu/status.h"
#include "schema/request_generated.h"

namespace recon::daemon {

struct ImageRules {
  uint32_t long_side = 512;                 // the model's default (or the requested resolution's)
  std::optional<ImageSize> required;        // InferOptions.resolution: the result must be this
  CropRule crop;                            // the model's patch size and square rule
  uint64_t max_inline_bytes = 64ull << 20;  // inline images larger than this are refused
};

// `which` names the image in errors ("image1"). NOT_FOUND for an unknown or foreign region,
// INVALID_ARGUMENT for bad geometry, format or sizes.
Result<PendingImage> accept_image(const wire::Image* image, const char* which, ClientId client, ShmRegistry& registry,
                                  const ImageRules& rules);

struct TensorRules {
  uint64_t max_bytes = uint64_t{1} << 31;          // any one tensor
  uint64_t max_inline_bytes = uint64_t{64} << 20;  // inline tensors
};

// `which` names the input in errors. NOT_FOUND for an unknown or foreign region, INVALID_ARGUMENT
// for a bad type, shape or size.
Result<PendingTensor> accept_tensor(const wire::TensorInput* tensor, const std::string& which, ClientId client,
                                    ShmRegistry& registry, const TensorRules& rules);

}  // namespace recon::daemon
