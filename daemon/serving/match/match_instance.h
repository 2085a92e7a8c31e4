// MatchInstance: descriptor matching on one device — the official fast reciprocal nearest-neighbour
// matcher (gpu/models/match/match.h) on the descriptors a result handle already holds in device
// memory. It has no weights; each device has one. A recorded matcher is kept per shape and options
// (building one records a graph and allocates its scratch: tens of ms, against ~2 ms to run it on a
// 512x384 pair). Worker thread only (model_instance.h).
#pragma once

#include <memory>
#include <vector>

#include "daemon/serving/model_instance.h"
#include "daemon/serving/model_request.h"
#include "daemon/serving/work_items.h"
#include "daemon/serving/worker_context.h"
#include "gpu/models/match/fast_matcher_cache.h"

namespace recon::daemon {

// A Match request (match_admission.cpp), in its KindWork placed on the device that holds `source`.
class MatchRequest final : public KindWork::Body {
 public:
  // On that device's worker: its matcher runs it.
  void run(RequestContext context, Device& device, const WorkerContext& worker) override;

  std::shared_ptr<const StoredResult> source;  // kept alive by the item: a Release cannot free it mid-match
  uint32_t max_matches = 0;                    // 0 = all
  uint32_t subsample = 8;
  float min_confidence = 0;
  HandleReservation reservation;
};

// The matcher's options for descriptors from a model whose heads ran in fp16 or not: the official
// fast matcher's, with this subsample and border, the search at fp16 on tensor cores for fp16
// heads' descriptors (docs/MATCHING.md).
gpu::FastMatchOptions match_options(int subsample, int border, bool fp16_descriptors);
// The reconstruct job matches with no border filter, as the official sparse global alignment does.
inline constexpr int kJobMatchBorder = 0;

class MatchInstance final : public ModelInstance {
 public:
  explicit MatchInstance(gpu::Runtime& runtime);
  // ModelKind::admit (match_admission.cpp): input pair (a whole result), parameters max_matches,
  // subsample, min_confidence → a MatchRequest on the pair's device.
  static Status admit(ModelRequest request, Scheduler& scheduler);
  ~MatchInstance() override;

  uint64_t weight_bytes() const override { return 0; }
  // Builds the matchers a model's results at this descriptor map size (h × w × dim) will use, so
  // that the first Match request and reconstruct job do not pay for recording them and creating
  // their pipelines: a Match request's with the defaults on a pair result, and the job's.
  Status warm(int64_t h, int64_t w, int64_t dim, bool fp16_descriptors);
  // `device` is the one this instance belongs to: its models tell how the descriptors were made.
  void run(const RequestContext& context, MatchRequest& job, Device& device, const WorkerContext& worker);
  // The device's recorded matchers, kept per shape and options (the reconstruct job's pairwise
  // stage uses them too).
  gpu::FastMatcherCache& matchers() { return matchers_; }

 private:
  gpu::Runtime& runtime_;
  gpu::FastMatcherCache matchers_;
};

}  // namespace recon::daemon
