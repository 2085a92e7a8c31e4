// Copying many tensors out of device memory in few submissions, through the caller's OneShot (and
// so on the queue of its choice: the daemon's fetch thread uses the device's copy queue, so that a
// fetch never waits behind a batch):
//  * into a region imported into this device (RegionImport): the GPU writes the tensors straight
//    into the client's pages, all in one submission — no staging buffer, no host copy;
//  * otherwise (inline answers, regions the device could not import): through staging chunks,
//    as many tensors (or pieces of one) per submission as fill a chunk.
// The destinations may be client shared memory (written, never read).
#pragma once

#include <cstdint>
#include <span>

#include "gpu/host_import.h"
#include "gpu/one_shot.h"
#include "gpu/runtime.h"
#include "gpu/status.h"
#include "gpu/tensor.h"

namespace recon::gpu {

struct TensorCopy {
  const Tensor* tensor = nullptr;
  uint8_t* destination = nullptr;  // tensor->bytes() bytes
};

// `import`: the destinations' host memory as imported into this device, or nullptr (staging).
// Every destination must then lie inside it.
Status copy_tensors_to_host(Runtime& rt, OneShot& submit, std::span<const TensorCopy> copies,
                            const HostImport* import = nullptr);

}  // namespace recon::gpu
