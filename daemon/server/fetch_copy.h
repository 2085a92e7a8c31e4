// Copying a result's tensors out of device memory for Fetch, through the caller's OneShot (the
// fetch thread's, on the device's copy queue), so that a fetch never waits behind a batch:
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

namespace recon::daemon {

struct TensorCopy {
  const gpu::Tensor* tensor = nullptr;
  uint8_t* destination = nullptr;  // tensor->bytes() bytes
};

// `import`: the destinations' host memory as imported into this device, or nullptr (staging).
// Every destination must then lie inside it.
Status copy_tensors_to_host(gpu::Runtime& rt, gpu::OneShot& submit, std::span<const TensorCopy> copies,
                            const gpu::HostImport* import);

}  // namespace recon::daemon
