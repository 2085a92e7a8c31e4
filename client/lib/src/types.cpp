// Names and sizes of librecon's value types.
#include "recon/client/types.h"

#include "recon/client/status.h"

namespace recon::client {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kI32:
    case DType::kU32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kU8:
      return 1;
    case DType::kI64:
      return 8;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kU8:
      return "u8";
    case DType::kI32:
      return "i32";
    case DType::kU32:
      return "u32";
    case DType::kI64:
      return "i64";
  }
  return "?";
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::kDefault:
      return "default";
    case Precision::kFp32:
      return "fp32";
    case Precision::kFp16:
      return "fp16";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16Heads:
      return "fp16-heads";
    case Precision::kFp32Split:
      return "fp32-split";
  }
  return "?";
}

std::string to_string(const Resolution& r) {
  return std::to_string(r.width) + "x" + std::to_string(r.height);
}

uint64_t TensorInfo::elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

const char* daemon_state_name(DaemonState state) {
  switch (state) {
    case DaemonState::kStarting:
      return "STARTING";
    case DaemonState::kWarming:
      return "WARMING";
    case DaemonState::kReady:
      return "READY";
    case DaemonState::kDegraded:
      return "DEGRADED";
    case DaemonState::kStopping:
      return "STOPPING";
  }
  return "?";
}

const char* model_state_name(ModelState state) {
  switch (state) {
    case ModelState::kLoading:
      return "LOADING";
    case ModelState::kWarming:
      return "WARMING";
    case ModelState::kReady:
      return "READY";
    case ModelState::kFailed:
      return "FAILED";
    case ModelState::kUnloading:
      return "UNLOADING";
  }
  return "?";
}

}  // namespace recon::client
