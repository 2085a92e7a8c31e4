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

}  // namespace recon::daemon
