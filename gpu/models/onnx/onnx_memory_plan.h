// Activation memory of a compiled ONNX graph, planned by liveness: an op's output takes the
// storage of a tensor whose last reader has already been recorded when one is large enough (best
// fit, same dtype), else a new pooled tensor. The Graph orders dispatches by their buffer ranges,
// so reuse adds the write-after-read barriers it needs and nothing else.
#pragma once

#include <vector>

#include "gpu/runtime.h"
#include "gpu/status.h"
#include "gpu/tensor.h"

namespace recon::gpu::onnx {

class MemoryPlan {
 public:
  explicit MemoryPlan(Runtime& rt) : rt_(rt) {}

  // A tensor of `dtype` and `shape` over a storage nobody live uses; `storage` receives its index.
  Result<Tensor> allocate(DType dtype, const Shape& shape, int& storage);
  // One more value (a view) reads or aliases `storage`.
  void retain(int storage);
  // A value of `storage` is dead; the storage is free again once every value on it is.
  void release(int storage);

  size_t storage_count() const { return storages_.size(); }
  // Bytes of all storages allocated: the plan's footprint.
  uint64_t bytes() const;

 private:
  struct Storage {
    Tensor tensor;  // flat [numel]
    int users = 0;
  };
  Runtime& rt_;
  std::vector<Storage> storages_;
};

}  // namespace recon::gpu::onnx
