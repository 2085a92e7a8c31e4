// ModelState names: see model.h.
#include "daemon/serving/model.h"

namespace recon::daemon {

const char* model_state_name(ModelState state) {
  switch (state) {
    case ModelState::kLoading:
      return "loading";
    case ModelState::kWarming:
      return "warming";
    case ModelState::kReady:
      return "ready";
    case ModelState::kFailed:
      return "failed";
    case ModelState::kUnloading:
      return "unloading";
  }
  return "unknown";
}

gpu::Precision gpu_precision(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return gpu::Precision::kF32;
    case Precision::kFp16:
      return gpu::Precision::kF16;
    case Precision::kFp16Heads:
      return gpu::Precision::kF16Heads;
  }
  return gpu::Precision::kF32;
}

}  // namespace recon::daemon
