// Result tensors as a handle lists them: made from host data (uploaded to the device once; match
// lists, a job's outputs) or from a tensor already on the device (an engine's output).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/serving/result_store.h"
#include "gpu/runtime.h"
#include "gpu/status.h"

namespace recon::daemon {

// `bytes` must equal the element count of `shape` times the size of `dtype`. An empty tensor
// (bytes == 0) gets no device buffer (device memory has no 0-byte buffers).
Result<StoredTensor> stored_from_host(gpu::Runtime& rt, std::string name, gpu::DType dtype, std::vector<uint64_t> shape,
                                      const void* data, uint64_t bytes);

// `tensor` under `name`, with its dtype, shape and size.
StoredTensor stored_tensor(std::string name, gpu::Tensor tensor);

template <typename T>
Result<StoredTensor> stored_from_host(gpu::Runtime& rt, std::string name, gpu::DType dtype, std::vector<uint64_t> shape,
                                      const std::vector<T>& data) {
  return stored_from_host(rt, std::move(name), dtype, std::move(shape), data.data(), data.size() * sizeof(T));
}

}  // namespace recon::daemon
