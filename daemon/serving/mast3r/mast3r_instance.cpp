// Mast3rInstance: see mast3r_instance.h.
#include "daemon/serving/mast3r/mast3r_instance.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "daemon/serving/device.h"
#include "daemon/serving/match/match_instance.h"
#include "daemon/serving/pair_outputs.h"
#include "daemon/serving/scheduler.h"
#include "gpu/log.h"

namespace recon::daemon {

Result<std::unique_ptr<ModelInstance>> Mast3rInstance::load(const ModelSpec& spec, Device& device, ModelInfo& info) {
  RECON_ASSIGN_OR_RETURN(std::unique_ptr<gpu::Mast3rEngine> engine,
                         gpu::Mast3rEngine::load(device.runtime(), spec.path, info.precision));
  const gpu::Mast3rConfig& config = engine->config();
  info.outputs.assign(std::begin(kMast3rOutputs), std::end(kMast3rOutputs));
  info.patch_size = static_cast<uint32_t>(config.patch_size);
  info.default_long_side = static_cast<uint32_t>(config.image_long_side());
  info.square_ok = config.image_crop().square_ok;
  info.desc_dim = static_cast<uint32_t>(config.desc_dim());
  auto instance = std::unique_ptr<Mast3rInstance>(new Mast3rInstance(std::move(engine), device.matcher()));
  info.weight_bytes = instance->weight_bytes();
  return std::unique_ptr<ModelInstance>(std::move(instance));
}

Status Mast3rInstance::warm(ImageSize size, uint32_t batch) {
  gpu::ForwardShape shape;
  shape.batch = batch;
  shape.view1 = {size.height, size.width};
  shape.view2 = shape.view1;
  RECON_RETURN_IF_ERROR(engine_->warmup(shape).with_context("warming at " + shape.to_string()));
  if (batch != 1) return Status::ok();
  return matcher_
      .warm(size.height, size.width, engine_->config().desc_dim(), engine_->weights().head_dtype() == gpu::DType::kF16)
      .with_context("warming the matchers at " + size.to_string());
}

uint64_t Mast3rInstance::weight_bytes() const {
  return engine_->weights().device_bytes();
}

void Mast3rInstance::run_pairs(std::vector<BatchWork> pairs, const WorkerContext& worker) {
  if (worker.options.before_batch) worker.options.before_batch();
  const auto picked = SteadyClock::now();
  std::vector<Ready> ready;
  ready.reserve(pairs.size());
  const uint32_t max_batch = pairs.front().rule.max_rows;
  for (BatchWork& job : pairs) {
    if (!worker.responder(job.context).may_start(picked)) continue;
    Ready r;
    r.picked = picked;
    r.pair = static_cast<PairInputs*>(job.body.get());  // this kind's BatchWork (mast3r_admission.cpp)
    Status status;
    for (int v = 0; v < 2 && status.is_ok(); ++v) {
      auto pixels = materialize(r.pair->images[v], worker.input);
      if (pixels.is_ok()) {
        r.pixels[v] = std::move(pixels).value();
      } else {
        status = pixels.status().with_context(v == 0 ? "image1" : "image2");
      }
    }
    if (!status.is_ok()) {
      worker.responder(job.context).fail(status);
      continue;
    }
    r.input_ns = ns_between(picked, SteadyClock::now());
    r.job = std::move(job);
    ready.push_back(std::move(r));
  }
  // Run in the batch sizes that have recorded graphs.
  size_t begin = 0;
  while (begin < ready.size()) {
    const size_t n = batch_size_for(ready.size() - begin, max_batch);
    std::vector<Ready> chunk;
    for (size_t i = begin; i < begin + n; ++i) chunk.push_back(std::move(ready[i]));
    run_engine(chunk, worker);
    begin += n;
  }
}

void Mast3rInstance::run_engine(std::vector<Ready>& ready, const WorkerContext& worker) {
  if (ready.empty()) return;
  std::vector<gpu::ImageU8View> views[2];
  for (Ready& r : ready) {
    for (int v = 0; v < 2; ++v) views[v].push_back(r.pixels[v].view());
  }
  const auto start = SteadyClock::now();
  auto result = engine_->infer(views[0], views[1]);
  const uint64_t compute_ns = ns_between(start, SteadyClock::now());
  if (!result.is_ok()) {
    if (result.status().code() == StatusCode::kResourceExhausted && ready.size() > 1) {
      // Out of device memory at this batch size: each pair on its own, so that only the pairs
      // that cannot run at all fail.
      log_warning("Batch of " + std::to_string(ready.size()) + " pairs ran out of device memory (" +
                  result.status().message() + "); retrying them one by one");
      for (Ready& r : ready) {
        std::vector<Ready> single;
        single.push_back(std::move(r));
        run_engine(single, worker);
      }
      return;
    }
    const Status status = result.status().with_context("inference failed");
    for (Ready& r : ready) worker.responder(r.job.context).fail(status);
    return;
  }
  worker.metrics.record_execution(ready.front().job.key.model, static_cast<uint32_t>(ready.size()));
  for (size_t b = 0; b < ready.size(); ++b) finish_pair(ready[b], *result, b, ready.size(), compute_ns, worker);
}

void Mast3rInstance::finish_pair(Ready& ready, const gpu::Mast3rResult& result, size_t index, size_t batch,
                                 uint64_t compute_ns, const WorkerContext& worker) {
  PairInputs& pair = *ready.pair;
  const Responder answer = worker.responder(ready.job.context);
  const StageTimes times{ready.picked, ready.input_ns, compute_ns, static_cast<uint32_t>(batch), SteadyClock::now()};
  auto tensors = pair_tensors(result.tensors, index, pair.outputs);
  if (!tensors.is_ok()) {
    answer.fail(tensors.status());
    return;
  }
  auto handle = answer.store(std::move(pair.reservation), ready.job.key.model, std::move(tensors).value(), times);
  if (!handle.is_ok()) {
    answer.fail(handle.status());
    return;
  }
  answer.finish(ModelAnswer{**handle});
}

// InferBatch: copy out every image once, one Mast3rEngine::infer_batch call for all pairs, then one
// result handle per pair. The handles are all-or-nothing: when one cannot be stored (quota, session
// gone) the ones stored before it are released and the request fails, except when streaming, where
// the pairs already answered stay and the error ends the stream.
void Mast3rInstance::run_infer_batch(const RequestContext& context, InferBatchRequest& job,
                                     const WorkerContext& worker) {
  if (worker.options.before_batch) worker.options.before_batch();
  const Responder answer = worker.responder(context);
  std::optional<PreparedImages> images = start_with_images(job.images, worker, answer);
  if (!images) return;
  const auto picked = images->picked;
  const uint64_t input_ns = images->input_ns;

  const auto start = SteadyClock::now();
  auto results = engine_->infer_batch(images->views, job.pairs);
  const uint64_t compute_ns = ns_between(start, SteadyClock::now());
  images.reset();  // releases the leases
  if (!results.is_ok()) {
    answer.fail(results.status().with_context("batch inference failed"));
    return;
  }
  if (results->size() != job.pairs.size()) {
    answer.fail(internal_error("the engine returned " + std::to_string(results->size()) + " results for " +
                               std::to_string(job.pairs.size()) + " pairs"));
    return;
  }
  worker.metrics.record_execution(job.model, static_cast<uint32_t>(job.pairs.size()));
  worker.metrics.record_batch(job.pairs.size());

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
        for (const auto& s : stored) worker.sinks.store.release(context.client(), s->id);
      }
      answer.fail(handle.status().with_context("pair " + std::to_string(k)));
      return;
    }
    stored.push_back(std::move(handle).value());
    if (job.stream) {
      const StoredResult* one[] = {stored.back().get()};
      answer.answer(PairsAnswer{one, std::span(&job.pairs[k], 1), static_cast<uint32_t>(k), k + 1 == job.pairs.size()});
    }
  }
  if (!job.stream) {
    std::vector<const StoredResult*> all;
    for (const auto& s : stored) all.push_back(s.get());
    answer.answer(PairsAnswer{all, job.pairs, 0, true});
  }
}

void run_pair_batch(std::vector<BatchWork> pairs, Device& device, const WorkerContext& worker) {
  const std::string& model = pairs.front().key.model;  // a batch shares its key
  if (Mast3rInstance* instance = device.ready<Mast3rInstance>(model)) {
    instance->run_pairs(std::move(pairs), worker);
    return;
  }
  const Status missing = device.missing(model);
  for (const BatchWork& job : pairs) worker.responder(job.context).fail(missing);
}

void InferBatchRequest::run(RequestContext context, Device& device, const WorkerContext& worker) {
  if (Mast3rInstance* instance = device.ready<Mast3rInstance>(model)) {
    instance->run_infer_batch(context, *this, worker);
  } else {
    worker.responder(context).fail(device.missing(model));
  }
}

}  // namespace recon::daemon
