// A result tensor made from host data: uploaded to the device once, named and shaped as a result
// handle lists it. Used by results computed on the host (match lists, a job's outputs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/server/result_store.h"
#include "gpu/runtime.h"
#include "gpu/status.h"

namespace recon::daemon {

// `bytes` must equal the element count of `shape` times the size of `dtype`. An empty tensor
// (bytes == 0) gets no device buffer (device memory has no 0-byte buffers).
Result<StoredTensor> stored_from_host(gpu::Runtime& rt, std::string name, gpu::DType dtype, std::vector<uint64_t> shape,
                                      const void* data, uint64_t bytes);

template <typename T>
Result<StoredTensor> stored_from_host(gpu::Runtime& rt, std::string name, gpu::DType dtype, std::vector<uint64_t> shape,
                                      const std::vector<T>& data) {
  return stored_from_host(rt, std::move(name), dtype, std::move(shape), data.data(), data.size() * sizeof(T));
}

}  // namespace recon::daemon
