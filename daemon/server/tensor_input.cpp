// Tensor inputs: see tensor_input.h.
#include "daemon/server/tensor_input.h"

#include "daemon/ipc/wire_convert.h"

namespace recon::daemon {
namespace {

constexpr size_t kMaxRank = 8;

Result<TensorElement> element_from_wire(wire::DType dtype, const std::string& which) {
  switch (dtype) {
    case wire::DType::F32:
      return TensorElement::kF32;
    case wire::DType::F16:
      return TensorElement::kF16;
    case wire::DType::U8:
      return TensorElement::kU8;
    case wire::DType::I32:
      return TensorElement::kI32;
    case wire::DType::I64:
      return TensorElement::kI64;
    default:
      return invalid_argument(which + ": element type " + std::string(wire::EnumNameDType(dtype)) +
                              " is not taken (F32, F16, U8, I32, I64)");
  }
}

}  // namespace

const char* tensor_element_name(TensorElement e) {
  switch (e) {
    case TensorElement::kF32:
      return "F32";
    case TensorElement::kF16:
      return "F16";
    case TensorElement::kU8:
      return "U8";
    case TensorElement::kI32:
      return "I32";
    case TensorElement::kI64:
      return "I64";
  }
  return "?";
}

size_t tensor_element_size(TensorElement e) {
  switch (e) {
    case TensorElement::kF32:
    case TensorElement::kI32:
      return 4;
    case TensorElement::kF16:
      return 2;
    case TensorElement::kU8:
      return 1;
    case TensorElement::kI64:
      return 8;
  }
  return 0;
}

Result<PendingTensor> accept_tensor(const wire::TensorInput* tensor, const std::string& which, ClientId client,
                                    ShmRegistry& registry, const TensorRules& rules) {
  if (tensor == nullptr || tensor->shape() == nullptr) return invalid_argument(which + " has no shape");
  PendingTensor out;
  RECON_ASSIGN_OR_RETURN(out.dtype, element_from_wire(tensor->dtype(), which));
  if (tensor->shape()->size() > kMaxRank) {
    return invalid_argument(which + " has rank " + std::to_string(tensor->shape()->size()) + "; at most 8");
  }
  uint64_t bytes = tensor_element_size(out.dtype);
  for (uint64_t d : *tensor->shape()) {
    if (d == 0 || d > rules.max_bytes || bytes > rules.max_bytes / d) {
      return invalid_argument(which + ": a dimension of " + std::to_string(d) +
                              " (every dimension is ≥ 1, and the tensor at most " + std::to_string(rules.max_bytes) +
                              " bytes)");
    }
    bytes *= d;
    out.shape.push_back(static_cast<int64_t>(d));
  }
  if (tensor->region_id() != nullptr) {
    auto lease = registry.lease_range(client, from_wire(tensor->region_id()), tensor->offset(), bytes);
    if (!lease.is_ok()) return lease.status().with_context(which);
    out.lease = std::move(lease).value();
    return out;
  }
  if (bytes > rules.max_inline_bytes) {
    return invalid_argument(which + ": an inline tensor of " + std::to_string(bytes) +
                            " bytes is over the limit; use a shared-memory region");
  }
  const uint64_t got = tensor->data() != nullptr ? tensor->data()->size() : 0;
  if (got != bytes) {
    return invalid_argument(which + ": inline data has " + std::to_string(got) + " bytes, the shape needs " +
                            std::to_string(bytes));
  }
  out.inline_bytes.assign(tensor->data()->begin(), tensor->data()->end());
  return out;
}

}  // namespace recon::daemon
