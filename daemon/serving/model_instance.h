// ModelInstance: one loaded model on one device. Device holds them; they are created, warmed, run
// and destroyed by that device's worker thread only (any other thread reads the catalog of their
// states, Device::model). Each kind adds how its requests run: Mast3rInstance (pairs, InferBatch,
// and the encoder that retrieval heads read), RetrievalInstance (EncodeRetrieval) and
// MatchInstance (Match; no weights, one per device).
#pragma once

#include <cstdint>

namespace recon::daemon {

class ModelInstance {
 public:
  virtual ~ModelInstance() = default;
  // Device memory its weights take.
  virtual uint64_t weight_bytes() const = 0;
};

}  // namespace recon::daemon
