// Copying a result's tensors out of device memory for Fetch: all tensors that fit in one staging
// chunk go in one submission (one fence wait) instead of one each, which is what dominates a
// fetch of many small tensors. Larger tensors fall back to Tensor::download (chunked).
// Runs on the GPU worker; the destinations may be client shared memory (written, never read).
#pragma once

#include <cstdint>
#include <span>

#include "gpu/runtime.h"
#include "gpu/status.h"
#include "gpu/tensor.h"

namespace recon::daemon {

struct TensorCopy {
  const gpu::Tensor* tensor = nullptr;
  uint8_t* destination = nullptr;  // tensor->bytes() bytes
};

Status copy_tensors_to_host(gpu::Runtime& rt, std::span<const TensorCopy> copies);

}  // namespace recon::daemon
