// Tensor inputs: see tensor_input.h.
#include "daemon/serving/tensor_input.h"

namespace recon::daemon {

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

}  // namespace recon::daemon
