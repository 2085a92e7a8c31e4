// stored_from_host: see stored_from_host.h.
#include "daemon/serving/stored_from_host.h"

namespace recon::daemon {

Result<StoredTensor> stored_from_host(gpu::Runtime& rt, std::string name, gpu::DType dtype, std::vector<uint64_t> shape,
                                      const void* data, uint64_t bytes) {
  StoredTensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes = bytes;
  if (bytes == 0) return t;
  const gpu::Shape device_shape(t.shape.begin(), t.shape.end());
  RECON_ASSIGN_OR_RETURN(t.tensor, gpu::Tensor::from_host(rt, dtype, device_shape, data, bytes));
  return t;
}

StoredTensor stored_tensor(std::string name, gpu::Tensor tensor) {
  StoredTensor t;
  t.name = std::move(name);
  t.dtype = tensor.dtype();
  t.shape.assign(tensor.shape().begin(), tensor.shape().end());
  t.bytes = tensor.bytes();
  t.tensor = std::move(tensor);
  return t;
}

}  // namespace recon::daemon
