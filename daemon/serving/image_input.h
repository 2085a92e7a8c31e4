// Input images of an inference, prepared for the model on a GPU worker. The transport accepts
// them first (daemon/server/wire_inputs.h: geometry, bounds and format checked, the bytes leased in
// the client's registered region or copied out of the message, the model-input size decided);
// materialize then brings an image to the model-input size with the official preparation, on one
// of three paths (the choice is logged and counted in ModelImage):
//   zero-copy — the region is imported into this device (region_import.h): the GPU resizes
//               straight from the client's pages, under the lease; a packed image already at model
//               size is not prepared at all (the engine copies it from the pages, and ModelImage
//               keeps the lease until then);
//   staging   — one upload of the image's bytes (region or inline), then the GPU resize;
//   CPU       — the pixels are copied out row by row and resized on the worker's CPU
//               (gpu_preprocess off, an image already at model size that is not imported, or the
//               fallback when the GPU path fails).
// Client memory is untrusted and may change at any time. The CPU and staging paths read it exactly
// once; the zero-copy path reads it in place (some bytes more than once), which is safe because no
// index or size depends on a pixel value: a client that writes its image while the request runs
// only spoils its own result. The lease is dropped once the GPU has finished reading.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "daemon/ipc/shm_registry.h"
#include "daemon/serving/image_size.h"
#include "gpu/models/mast3r/mast3r_engine.h"
#include "gpu/runtime.h"
#include "gpu/status.h"

namespace recon::daemon {

struct PendingImage {
  RegionLease lease;                  // region images: the image's bytes (starting at its first pixel)
  std::vector<uint8_t> inline_bytes;  // inline images: packed rows
  ImageSize size;                     // as sent
  uint32_t stride = 0;                // bytes between rows in the source
  ImageSize target;                   // model-input size after the official preparation
  uint32_t long_side = 0;             // the preparation's "size"
  CropRule crop;                      // and its crop (the model's patch size, squares kept or 4:3)
  bool resize = false;                // false: target == size, pixels are copied as they are
};

// Where a worker prepares images.
struct InputPreparation {
  gpu::Runtime* runtime = nullptr;  // the worker's device; nullptr = CPU only
  size_t device = 0;                // its Device::index (region imports are per device)
  bool gpu_preprocess = true;       // false: always the CPU path
};

enum class InputPath { kZeroCopy, kStaging, kCpu };
const char* input_path_name(InputPath path);

// An image at model-input size: a packed u8 [H, W, 3] device tensor when the GPU prepared it (or,
// for a packed image already at model size in an imported region, a view of the client's pages,
// kept alive by `lease`), packed host rows otherwise.
struct ModelImage {
  gpu::Tensor device;
  RegionLease lease;  // held while `device` views the client's pages
  std::vector<uint8_t> host;
  ImageSize size;
  InputPath path = InputPath::kCpu;
  // For Mast3rEngine; points into this object, which must stay put while the view is used.
  gpu::ImageU8View view() const;
};

// `image` at `image.target` (see the file comment for the paths). Releases the lease, or moves it
// into the result when the engine reads the client's pages in place.
Result<ModelImage> materialize(PendingImage& image, const InputPreparation& where);
// Every image of a request, in order; the error names the image ("images[3]: ...").
Result<std::vector<ModelImage>> materialize_all(std::vector<PendingImage>& images, const InputPreparation& where);

}  // namespace recon::daemon
