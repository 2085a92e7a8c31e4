// ModelInstance: one loaded model on one device. Device holds them; they are created (by their
// kind's ModelKind::load), warmed, run and destroyed by that device's worker thread only (any
// other thread reads the catalog of their states, Device::model). Each kind adds how its requests
// run: Mast3rInstance (pairs, InferBatch, and the encoder that retrieval heads read),
// RetrievalInstance (EncodeRetrieval) and MatchInstance (Match; no weights, one per device).
#pragma once

#include <cstdint>

#include "daemon/serving/image_size.h"
#include "gpu/status.h"

namespace recon::daemon {

class ModelInstance {
 public:
  virtual ~ModelInstance() = default;
  // Device memory its weights take.
  virtual uint64_t weight_bytes() const = 0;
  // Builds and runs once what requests of `batch` images of `size` (both views of a pair) will
  // need — pipelines, recorded graphs — so that the first such request does not pay for it. Kinds
  // whose row says warms = false have nothing to build.
  virtual Status warm(ImageSize size, uint32_t batch) {
    (void)size;
    (void)batch;
    return Status::ok();
  }
};

}  // namespace recon::daemon
