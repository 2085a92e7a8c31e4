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

#include "daemon/serving/model.h"
#include "daemon/serving/model_instance.h"
#include "daemon/serving/model_request.h"
#include "daemon/serving/work_items.h"
#include "daemon/serving/worker_context.h"
#include "gpu/models/mast3r/mast3r_engine.h"

namespace recon::daemon {

class Device;
class MatchInstance;

// Output names of a MASt3R pair (DESIGN.md §4), in the order results list them.
inline constexpr const char* kMast3rOutputs[] = {"pts3d_1", "pts3d_2", "conf_1",      "conf_2",
                                                 "desc_1",  "desc_2",  "desc_conf_1", "desc_conf_2"};

// An InferPair's own data in its BatchWork (BatchWork::body).
struct PairInputs final : BatchWork::Body {
  std::array<PendingImage, 2> images;
  std::vector<std::string> outputs;  // empty = all
  HandleReservation reservation;
};

// An InferBatch request (Server::on_infer_batch), in its KindWork: many pairs over one image list,
// one engine call (Mast3rEngine::infer_batch). Each pair becomes its own result handle, so it holds
// one reservation per pair.
class InferBatchRequest final : public KindWork::Body {
 public:
  // On a device where `model` is ready: its instance runs it; else it fails with the model's state.
  void run(RequestContext context, Device& device, const WorkerContext& worker) override;

  std::string model;
  std::vector<PendingImage> images;
  std::vector<gpu::ImagePair> pairs;            // after `symmetric` doubling
  std::vector<std::string> outputs;             // empty = all
  bool stream = false;                          // one answer per pair (the last final) instead of one at the end
  std::vector<HandleReservation> reservations;  // one per pair
};

class Mast3rInstance final : public ModelInstance {
 public:
  // ModelKind::load: the weights at spec.path, in spec.precision.
  static Result<std::unique_ptr<ModelInstance>> load(const ModelSpec& spec, Device& device, ModelInfo& info);
  // ModelKind::admit (mast3r_admission.cpp): inputs image1, image2 → one BatchWork, submitted.
  static Status admit(ModelRequest request, Scheduler& scheduler);

  gpu::Mast3rEngine& engine() { return *engine_; }
  uint64_t weight_bytes() const override;
  // The engine's graph for `batch` pairs with both views of `size`; at batch 1 also the device's
  // matchers for its descriptors at that size (MatchInstance::warm).
  Status warm(ImageSize size, uint32_t batch) override;

  void run_pairs(std::vector<BatchWork> pairs, const WorkerContext& worker);
  void run_infer_batch(const RequestContext& context, InferBatchRequest& job, const WorkerContext& worker);

 private:
  struct Ready {
    BatchWork job;
    PairInputs* pair = nullptr;  // job.body
    std::array<ModelImage, 2> pixels;
    uint64_t input_ns = 0;
    SteadyClock::time_point picked;
  };

  Mast3rInstance(std::unique_ptr<gpu::Mast3rEngine> engine, MatchInstance& matcher)
      : engine_(std::move(engine)), matcher_(matcher) {}
  // Runs `ready` (an allowed batch size) in one engine call and answers each pair.
  void run_engine(std::vector<Ready>& ready, const WorkerContext& worker);
  void finish_pair(Ready& ready, const gpu::Mast3rResult& result, size_t index, size_t batch, uint64_t compute_ns,
                   const WorkerContext& worker);

  std::unique_ptr<gpu::Mast3rEngine> engine_;
  MatchInstance& matcher_;  // the device's, which outlives its models
};

// A batch of InferPair requests (BatchWork::run; mast3r_admission.cpp): the ready instance of their
// model runs them, or every one fails with the model's state.
void run_pair_batch(std::vector<BatchWork> pairs, Device& device, const WorkerContext& worker);

}  // namespace recon::daemon
