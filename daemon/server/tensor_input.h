// Tensor inputs of an Infer (the onnx kind's), checked on the I/O thread: element type, shape
// (rank ≤ 8, every dimension ≥ 1, bounded size) and bytes — leased in the client's registered
// region (bounds-checked by ShmRegistry, read in place by the worker, never copied into the
// message) or copied out of an inline message. Client memory is untrusted and may change while the
// request runs: the worker reads it once, and no size or index depends on its contents.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "daemon/ipc/shm_registry.h"
#include "gpu/status.h"
#include "schema/request_generated.h"

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

struct TensorRules {
  uint64_t max_bytes = uint64_t{1} << 31;          // any one tensor
  uint64_t max_inline_bytes = uint64_t{64} << 20;  // inline tensors
};

// `which` names the input in errors. NOT_FOUND for an unknown or foreign region, INVALID_ARGUMENT
// for a bad type, shape or size.
Result<PendingTensor> accept_tensor(const wire::TensorInput* tensor, const std::string& which, ClientId client,
                                    ShmRegistry& registry, const TensorRules& rules);

}  // namespace recon::daemon
