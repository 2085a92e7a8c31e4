// MatchInstance: descriptor matching on one device — the official fast reciprocal nearest-neighbour
// matcher (gpu/models/match/match.h) on the descriptors a result handle already holds in device
// memory. It has no weights; each device has one. A recorded matcher is kept per shape and options
// (building one records a graph and allocates its scratch: tens of ms, against ~2 ms to run it on a
// 512x384 pair). Worker thread only (model_instance.h).
#pragma once

#include <memory>
#include <vector>

#include "daemon/server/work_items.h"
#include "daemon/server/worker_context.h"
#include "daemon/serving/model_instance.h"
#include "daemon/serving/model_request.h"
#include "gpu/models/match/fast_matcher_cache.h"

namespace recon::daemon {

class MatchInstance final : public ModelInstance {
 public:
  explicit MatchInstance(gpu::Runtime& runtime);
  // ModelKind::admit (match_admission.cpp): input pair (a whole result), parameters max_matches,
  // subsample, min_confidence → MatchWork on the pair's device.
  static Status admit(ModelRequest request, Scheduler& scheduler);
  ~MatchInstance() override;

  uint64_t weight_bytes() const override { return 0; }
  void run(MatchWork job, const WorkerContext& worker);
  // The device's recorded matchers, kept per shape and options (the reconstruct job's pairwise
  // stage uses them too).
  gpu::FastMatcherCache& matchers() { return matchers_; }

 private:
  gpu::Runtime& runtime_;
  gpu::FastMatcherCache matchers_;
};

// The worker's entry point (GpuWorker): the device's matcher runs `job`.
void run_work(MatchWork job, Device& device, const WorkerContext& worker);

}  // namespace recon::daemon
