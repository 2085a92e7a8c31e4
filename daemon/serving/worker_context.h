// What a device's worker hands the model instances that run its requests: where answers and
// results go, the metrics, how images are prepared, and the worker's options (test hooks, the
// batch sizes it warmed).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "daemon/serving/image_input.h"
#include "daemon/serving/metrics.h"
#include "daemon/serving/responder.h"

namespace recon::daemon {

struct WorkerOptions {
  // How long the worker sleeps between heartbeats when idle.
  std::chrono::milliseconds idle_tick{250};
  // Test hook: runs before every pair batch on the worker thread (e.g. to hold a request in
  // flight). Empty in the daemon.
  std::function<void()> before_batch;
  // Test hook (the request fuzzer): while it returns true, every job that would run a model
  // (pairs, InferBatch, Match, EncodeRetrieval, Warmup/LoadModel/UnloadModel) is answered
  // UNAVAILABLE at once, without the device; fetches and the start-up still run. Empty in the daemon.
  std::function<bool()> skip_models;
  // Test hook: true when device `index` is to count as lost (as if the driver had reported
  // VK_ERROR_DEVICE_LOST). Empty in the daemon.
  std::function<bool(size_t index)> device_lost;
  // Image preparation on the GPU (image_input.h); false: on this thread's CPU.
  bool gpu_preprocess = true;
};

struct WorkerContext {
  const AnswerSinks& sinks;
  Metrics& metrics;
  const InputPreparation& input;
  const WorkerOptions& options;

  Responder responder(const RequestContext& context) const { return Responder(context, sinks); }
};

// A request's images prepared for its model (image_input.h), the views an engine reads (they point
// into `pixels`, which holds the leases until it is cleared), when the worker picked the request
// and the time the preparation took.
struct PreparedImages {
  std::vector<ModelImage> pixels;
  std::vector<gpu::ImageU8View> views;
  SteadyClock::time_point picked;
  uint64_t input_ns = 0;
};

// The start of a request that takes a list of images (InferBatch, EncodeRetrieval): nullopt when
// it may not start (Responder::may_start) or an image cannot be prepared (answered through
// `answer`); else its images, prepared.
std::optional<PreparedImages> start_with_images(std::vector<PendingImage>& images, const WorkerContext& worker,
                                                const Responder& answer);

}  // namespace recon::daemon
