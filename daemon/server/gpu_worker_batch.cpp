// GpuWorker: InferBatch — copy out every image once, one Mast3rEngine::infer_batch call for all
// pairs, then one result handle per pair. The handles are all-or-nothing: when one cannot be
// stored (quota, session gone) the ones stored before it are released and the request fails,
// except when streaming, where the pairs already answered stay and the error ends the stream.
#include <utility>

#include "daemon/server/gpu_worker.h"
#include "daemon/server/pair_outputs.h"
#include "daemon/server/responses.h"

namespace recon::daemon {

void GpuWorker::run_infer_batch(InferBatchJob job) {
  if (options_.before_batch) options_.before_batch();
  const Responder answer = responder(job.context);
  const auto picked = SteadyClock::now();
  if (!answer.may_start(picked)) return;
  gpu::Mast3rEngine* engine = device_.engine(job.model);
  if (engine == nullptr) {
    answer.fail(engine_missing(job.model));
    return;
  }
  auto pixels = materialize_all(job.images, input_);
  if (!pixels.is_ok()) {
    answer.fail(pixels.status());
    return;
  }
  std::vector<gpu::ImageU8View> views;
  for (const ModelImage& image : *pixels) views.push_back(image.view());  // they point into *pixels
  const uint64_t input_ns = ns_between(picked, SteadyClock::now());

  const auto start = SteadyClock::now();
  auto results = engine->infer_batch(views, job.pairs);
  const uint64_t compute_ns = ns_between(start, SteadyClock::now());
  pixels->clear();  // releases the leases
  if (!results.is_ok()) {
    answer.fail(results.status().with_context("batch inference failed"));
    return;
  }
  if (results->size() != job.pairs.size()) {
    answer.fail(internal_error("the engine returned " + std::to_string(results->size()) + " results for " +
                               std::to_string(job.pairs.size()) + " pairs"));
    return;
  }
  metrics_.record_execution(static_cast<uint32_t>(job.pairs.size()));
  metrics_.record_batch(job.pairs.size());

  std::vector<std::shared_ptr<const StoredResult>> stored;
  stored.reserve(job.pairs.size());
  for (size_t k = 0; k < job.pairs.size(); ++k) {
    const StageTimes times{picked, input_ns, compute_ns, static_cast<uint32_t>(job.pairs.size()), SteadyClock::now()};
    auto handle = [&]() -> Result<std::shared_ptr<const StoredResult>> {
      RECON_ASSIGN_OR_RETURN(auto tensors, pair_tensors((*results)[k].tensors, 0, job.outputs));
      (*results)[k] = gpu::Mast3rResult();  // the stored views keep the device memory alive
      return answer.store(std::move(job.reservations[k]), job.model, std::move(tensors), times);
    }();
    if (!handle.is_ok()) {
      if (!job.stream) {
        for (const auto& s : stored) sinks_.store.release(job.context.client(), s->id);
      }
      answer.fail(handle.status().with_context("pair " + std::to_string(k)));
      return;
    }
    stored.push_back(std::move(handle).value());
    metrics_.record_timings(stored.back()->timings);
    if (job.stream) {
      const StoredResult* one[] = {stored.back().get()};
      auto response = infer_batch_response(answer.request_id(), one, std::span(&job.pairs[k], 1),
                                           static_cast<uint32_t>(k), k + 1 == job.pairs.size());
      if (k + 1 == job.pairs.size()) {
        answer.finish(std::move(response));
      } else {
        answer.partial(std::move(response));
      }
    }
  }
  if (!job.stream) {
    std::vector<const StoredResult*> all;
    for (const auto& s : stored) all.push_back(s.get());
    answer.finish(infer_batch_response(answer.request_id(), all, job.pairs, 0, true));
  }
}

}  // namespace recon::daemon
