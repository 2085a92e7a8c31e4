// Tensor inputs of an Infer (the onnx kind's) as the transport accepted them (daemon/server/
// wire_inputs.h: element type, shape and size checked): the bytes leased in the client's registered
// region (read in place by the worker, never copied into the message) or copied out of an inline
// message. Client memory is untrusted and may change while the request runs: the worker reads it
// once, and no size or index depends on its contents.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "daemon/ipc/shm_registry.h"
#include "gpu/status.h"

namespace recon::daemon {

enum class TensorElement : uint8_t { kF32, kF16, kU8, kI32, kI64 };
const char* tensor_element_name(TensorElement e);
size_t tensor_element_size(TensorElement e);

struct PendingTensor {
  TensorElement dtype = TensorElement::kF32;
  std::vector<int64_t> shape;
  RegionLease lease;                  // region tensors: exactly the tensor's bytes
  std::vector<uint8_t> inline_bytes;  // inline tensors
  std::span<const uint8_t> bytes() const {
    return lease ? std::span<const uint8_t>(lease.bytes()) : std::span<const uint8_t>(inline_bytes);
  }
};

}  // namespace recon::daemon
