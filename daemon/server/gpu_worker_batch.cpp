// GpuWorker: InferBatch — copy out every image once, one Mast3rEngine::infer_batch call for all
// pairs, then one result handle per pair. The handles are all-or-nothing: when one cannot be
// stored (quota, session gone) the ones stored before it are released and the request fails,
// except when streaming, where the pairs already answered stay and the error ends the stream.
#include <utility>

#include "daemon/server/gpu_worker.h"
#include "daemon/server/pair_outputs.h"
#include "daemon/server/responses.h"

namespace recon::daemon {

void GpuWorker::run_infer_batch(BatchJob job) {
  if (options_.before_batch) options_.before_batch();
  const auto picked = SteadyClock::now();
  if (job.deadline && picked > *job.deadline) {
    answer_error(job.reply, unavailable("the request's deadline passed while it was queued"));
    return;
  }
  if (!store_.client_open(job.client)) return;  // session ended: nobody holds its results
  gpu::Mast3rEngine* engine = device_.engine(job.model);
  if (engine == nullptr) {
    answer_error(job.reply, engine_missing(job.model));
    return;
  }
  auto pixels = materialize_all(job.images, input_);
  if (!pixels.is_ok()) {
    answer_error(job.reply, pixels.status());
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
    answer_error(job.reply, results.status().with_context("batch inference failed"));
    return;
  }
  if (results->size() != job.pairs.size()) {
    answer_error(job.reply, internal_error("the engine returned " + std::to_string(results->size()) + " results for " +
                                           std::to_string(job.pairs.size()) + " pairs"));
    return;
  }
  metrics_.record_execution(static_cast<uint32_t>(job.pairs.size()));
  metrics_.record_batch(job.pairs.size());

  std::vector<std::shared_ptr<const StoredResult>> stored;
  stored.reserve(job.pairs.size());
  for (size_t k = 0; k < job.pairs.size(); ++k) {
    const auto output_start = SteadyClock::now();
    StoredResult result;
    result.device = device_.index();
    result.model = job.model;
    result.ttl_ms = job.ttl_ms;
    auto tensors = pair_tensors((*results)[k].tensors, 0, job.outputs);
    Status status = tensors.status();
    if (tensors.is_ok()) {
      result.tensors = std::move(tensors).value();
      (*results)[k] = gpu::Mast3rResult();  // the stored views keep the device memory alive
      RequestTimings& t = result.timings;
      t.queue_ns = ns_between(job.received, picked);
      t.input_ns = input_ns;
      t.compute_ns = compute_ns;
      t.batch_size = static_cast<uint32_t>(job.pairs.size());
      const auto now = SteadyClock::now();
      t.output_ns = ns_between(output_start, now);
      t.total_ns = ns_between(job.received, now);
      auto handle = store_.insert(std::move(job.reservations[k]), std::move(result));
      status = handle.status();
      if (handle.is_ok()) stored.push_back(std::move(handle).value());
    }
    if (!status.is_ok()) {
      if (!job.stream) {
        for (const auto& s : stored) store_.release(job.client, s->id);
      }
      answer_error(job.reply, status.with_context("pair " + std::to_string(k)));
      return;
    }
    metrics_.record_timings(stored.back()->timings);
    if (job.stream) {
      const StoredResult* one[] = {stored.back().get()};
      const bool last = k + 1 == job.pairs.size();
      answer(
          job.reply,
          infer_batch_response(job.reply.request_id, one, std::span(&job.pairs[k], 1), static_cast<uint32_t>(k), last),
          StatusCode::kOk, last);
    }
  }
  if (!job.stream) {
    std::vector<const StoredResult*> all;
    for (const auto& s : stored) all.push_back(s.get());
    answer(job.reply, infer_batch_response(job.reply.request_id, all, job.pairs, 0, true), StatusCode::kOk);
  }
}

}  // namespace recon::daemon
