// Input images of an inference, in two steps:
//  1. accept_image (I/O thread): checks a verified wire::Image — geometry, bounds, format — and
//     either leases the bytes in the client's registered region (bounds-checked by ShmRegistry)
//     or copies inline bytes out of the message; decides the model-input size (image_size.h).
//  2. materialize (GPU worker): copies the pixels out of shared memory while the lease is held,
//     drops the lease, and resizes with the official preparation when the image is not at
//     model size. Client memory is untrusted and may change at any time: nothing reads it twice,
//     and the engine only ever sees the private copy.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "daemon/ipc/shm_registry.h"
#include "daemon/server/image_size.h"
#include "gpu/status.h"
#include "schema/request_generated.h"

namespace recon::daemon {

struct PendingImage {
  RegionLease lease;                  // region images: the image's bytes (starting at its first pixel)
  std::vector<uint8_t> inline_bytes;  // inline images: packed rows
  ImageSize size;                     // as sent
  uint32_t stride = 0;                // bytes between rows in the source
  ImageSize target;                   // model-input size after the official preparation
  uint32_t long_side = 0;             // the preparation's "size"
  bool resize = false;                // false: target == size, pixels are copied as they are
};

struct ImageRules {
  uint32_t long_side = 512;                 // the model's default (or the requested resolution's)
  std::optional<ImageSize> required;        // InferOptions.resolution: the result must be this
  uint64_t max_inline_bytes = 64ull << 20;  // inline images larger than this are refused
};

// `which` names the image in errors ("image1"). NOT_FOUND for an unknown or foreign region,
// INVALID_ARGUMENT for bad geometry, format or sizes.
Result<PendingImage> accept_image(const wire::Image* image, const char* which, ClientId client, ShmRegistry& registry,
                                  const ImageRules& rules);

// Packed RGB8 rows at `image.target`. Releases the lease.
Result<std::vector<uint8_t>> materialize(PendingImage& image);

}  // namespace recon::daemon
