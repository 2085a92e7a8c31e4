// Mast3rInstance: a MASt3R model (gpu::Mast3rEngine) on one device, and how its requests run:
//  * InferPair: the pairs the Scheduler batched (same BatchKey) run in the batch sizes that have
//    recorded graphs; a batch that runs out of device memory is retried pair by pair, so only the
//    pairs that cannot run at all get RESOURCE_EXHAUSTED;
//  * InferBatch: every image copied out once, one engine call, one result handle per pair.
// Retrieval heads read its encoder (RetrievalInstance). Worker thread only (model_instance.h).
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "daemon/server/jobs.h"
#include "daemon/server/model_instance.h"
#include "daemon/server/worker_context.h"
#include "gpu/models/mast3r/mast3r_engine.h"

namespace recon::daemon {

class Mast3rInstance final : public ModelInstance {
 public:
  static Result<std::unique_ptr<Mast3rInstance>> load(gpu::Runtime& rt, const std::string& path,
                                                      gpu::Precision precision);

  gpu::Mast3rEngine& engine() { return *engine_; }
  uint64_t weight_bytes() const override;

  void run_pairs(std::vector<PairJob> pairs, const WorkerContext& worker);
  void run_infer_batch(InferBatchJob job, const WorkerContext& worker);

 private:
  struct Ready {
    PairJob job;
    std::array<ModelImage, 2> pixels;
    uint64_t input_ns = 0;
    SteadyClock::time_point picked;
  };

  explicit Mast3rInstance(std::unique_ptr<gpu::Mast3rEngine> engine) : engine_(std::move(engine)) {}
  // Runs `ready` (an allowed batch size) in one engine call and answers each pair.
  void run_engine(std::vector<Ready>& ready, const WorkerContext& worker);
  void finish_pair(Ready& ready, const gpu::Mast3rResult& result, size_t index, size_t batch, uint64_t compute_ns,
                   const WorkerContext& worker);

  std::unique_ptr<gpu::Mast3rEngine> engine_;
};

}  // namespace recon::daemon
