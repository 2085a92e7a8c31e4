#include "gpu/models/onnx/onnx_memory_plan.h"

namespace recon::gpu::onnx {

Result<Tensor> MemoryPlan::allocate(DType dtype, const Shape& shape, int& storage) {
  const int64_t need = std::max<int64_t>(shape_numel(shape), 1);
  int best = -1;
  for (size_t i = 0; i < storages_.size(); ++i) {
    const Storage& s = storages_[i];
    if (s.users > 0 || s.tensor.dtype() != dtype || s.tensor.numel() < need) continue;
    if (best < 0 || s.tensor.numel() < storages_[static_cast<size_t>(best)].tensor.numel()) best = static_cast<int>(i);
  }
  if (best < 0) {
    RECON_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(rt_, dtype, {need}));
    storages_.push_back({std::move(t), 0});
    best = static_cast<int>(storages_.size() - 1);
  }
  Storage& s = storages_[static_cast<size_t>(best)];
  s.users = 1;
  storage = best;
  RECON_ASSIGN_OR_RETURN(Tensor rows, s.tensor.slice_rows(0, need));
  return rows.reshape(shape);
}

void MemoryPlan::retain(int storage) {
  if (storage >= 0) ++storages_[static_cast<size_t>(storage)].users;
}

void MemoryPlan::release(int storage) {
  if (storage >= 0 && storages_[static_cast<size_t>(storage)].users > 0)
    --storages_[static_cast<size_t>(storage)].users;
}

uint64_t MemoryPlan::bytes() const {
  uint64_t total = 0;
  for (const Storage& s : storages_) total += s.tensor.bytes();
  return total;
}

}  // namespace recon::gpu::onnx
