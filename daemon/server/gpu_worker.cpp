// GpuWorker: see gpu_worker.h.
#include "daemon/server/gpu_worker.h"

#include <utility>

#include "daemon/ipc/wire_convert.h"
#include "daemon/server/fetch_copy.h"
#include "daemon/server/pair_outputs.h"
#include "daemon/server/responses.h"
#include "daemon/service/journal_log.h"
#include "gpu/log.h"

namespace recon::daemon {
GpuWorker::GpuWorker(Device& device, Scheduler& scheduler, ResultStore& store, Metrics& metrics, Outbox& outbox,
                     WorkerOptions options)
    : device_(device),
      scheduler_(scheduler),
      metrics_(metrics),
      sinks_{store, outbox, device.index()},
      options_(std::move(options)),
      input_{&device.runtime(), device.index(), options_.gpu_preprocess} {
  beat();
}

GpuWorker::~GpuWorker() {
  join();
}

void GpuWorker::start() {
  running_ = true;
  thread_ = std::thread([this] { loop(); });
}

void GpuWorker::join() {
  if (thread_.joinable()) thread_.join();
}

void GpuWorker::beat() {
  heartbeat_.store(SteadyClock::now().time_since_epoch().count(), std::memory_order_relaxed);
}

void GpuWorker::loop() {
  while (true) {
    Work work;
    const Scheduler::Wait wait = scheduler_.next(device_.index(), options_.idle_tick, work);
    beat();
    if (wait == Scheduler::Wait::kClosed) break;
    if (wait == Scheduler::Wait::kIdle) continue;
    if (options_.skip_models && options_.skip_models() && skip_model_work(work)) {
      const auto* pairs = std::get_if<std::vector<PairJob>>(&work);
      scheduler_.finished(device_.index(), pairs != nullptr ? pairs->size() : 1);
      beat();
      continue;
    }
    if (auto* pairs = std::get_if<std::vector<PairJob>>(&work)) {
      const size_t count = pairs->size();
      run_pairs(std::move(*pairs));
      scheduler_.finished(device_.index(), count);
    } else if (auto* fetch = std::get_if<FetchJob>(&work)) {
      run_fetch(std::move(*fetch));
      scheduler_.finished(device_.index(), 1);
    } else if (auto* control = std::get_if<ControlJob>(&work)) {
      run_control(std::move(*control));
      scheduler_.finished(device_.index(), 1);
    } else if (auto* solo = std::get_if<SoloJob>(&work)) {
      if (auto* batch = std::get_if<InferBatchJob>(solo)) {
        run_infer_batch(std::move(*batch));
      } else if (auto* retrieval = std::get_if<RetrievalJob>(solo)) {
        run_encode_retrieval(std::move(*retrieval));
      } else {
        run_match(std::move(std::get<MatchJob>(*solo)));
      }
      scheduler_.finished(device_.index(), 1);
    }
    beat();
  }
  running_ = false;
}

bool GpuWorker::skip_model_work(Work& work) {
  const Status skipped = unavailable("model work is skipped (test hook)");
  if (auto* pairs = std::get_if<std::vector<PairJob>>(&work)) {
    for (const PairJob& job : *pairs) responder(job.context).fail(skipped);
    return true;
  }
  if (auto* solo = std::get_if<SoloJob>(&work)) {
    responder(std::visit([](const auto& j) -> const RequestContext& { return j.context; }, *solo)).fail(skipped);
    return true;
  }
  if (auto* control = std::get_if<ControlJob>(&work); control != nullptr && control->reply) {
    sinks_.outbox.push(
        OutgoingReply{*control->reply, error_response(control->reply->request_id, skipped), skipped.code(), true});
    return true;
  }
  return false;  // fetches, and the start-up (a control job without a reply)
}

Status GpuWorker::engine_missing(const std::string& model) const {
  const auto info = device_.model(model);
  return info ? unavailable("model '" + model + "' is " + model_state_name(info->state))
              : not_found("model '" + model + "' is not loaded");
}

void GpuWorker::run_pairs(std::vector<PairJob> pairs) {
  if (options_.before_batch) options_.before_batch();
  const auto picked = SteadyClock::now();
  std::vector<Ready> ready;
  ready.reserve(pairs.size());
  for (PairJob& job : pairs) {
    if (!responder(job.context).may_start(picked)) continue;
    Ready r;
    r.picked = picked;
    Status status;
    for (int v = 0; v < 2 && status.is_ok(); ++v) {
      auto pixels = materialize(job.images[v], input_);
      if (pixels.is_ok()) {
        r.pixels[v] = std::move(pixels).value();
      } else {
        status = pixels.status().with_context(v == 0 ? "image1" : "image2");
      }
    }
    if (!status.is_ok()) {
      responder(job.context).fail(status);
      continue;
    }
    r.input_ns = ns_between(picked, SteadyClock::now());
    r.job = std::move(job);
    ready.push_back(std::move(r));
  }
  // Run in the batch sizes that have recorded graphs.
  size_t begin = 0;
  while (begin < ready.size()) {
    const size_t n = batch_size_for(ready.size() - begin, options_.max_batch);
    std::vector<Ready> chunk;
    for (size_t i = begin; i < begin + n; ++i) chunk.push_back(std::move(ready[i]));
    run_engine(chunk);
    begin += n;
  }
}

void GpuWorker::run_engine(std::vector<Ready>& ready) {
  if (ready.empty()) return;
  const BatchKey& key = ready.front().job.key;
  gpu::Mast3rEngine* engine = device_.engine(key.model);
  if (engine == nullptr) {
    const Status status = engine_missing(key.model);
    for (Ready& r : ready) responder(r.job.context).fail(status);
    return;
  }
  std::vector<gpu::ImageU8View> views[2];
  for (Ready& r : ready) {
    for (int v = 0; v < 2; ++v) views[v].push_back(r.pixels[v].view());
  }
  const auto start = SteadyClock::now();
  auto result = engine->infer(views[0], views[1]);
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
        run_engine(single);
      }
      return;
    }
    const Status status = result.status().with_context("inference failed");
    for (Ready& r : ready) responder(r.job.context).fail(status);
    return;
  }
  metrics_.record_execution(static_cast<uint32_t>(ready.size()));
  for (size_t b = 0; b < ready.size(); ++b) finish_pair(ready[b], *result, b, ready.size(), compute_ns);
}

void GpuWorker::finish_pair(Ready& ready, const gpu::Mast3rResult& result, size_t index, size_t batch,
                            uint64_t compute_ns) {
  PairJob& job = ready.job;
  const Responder answer = responder(job.context);
  const StageTimes times{ready.picked, ready.input_ns, compute_ns, static_cast<uint32_t>(batch), SteadyClock::now()};
  auto tensors = pair_tensors(result.tensors, index, job.outputs);
  if (!tensors.is_ok()) {
    answer.fail(tensors.status());
    return;
  }
  auto handle = answer.store(std::move(job.reservation), job.key.model, std::move(tensors).value(), times);
  if (!handle.is_ok()) {
    answer.fail(handle.status());
    return;
  }
  metrics_.record_timings((*handle)->timings);
  answer.finish(infer_pair_response(answer.request_id(), **handle));
}

void GpuWorker::run_fetch(FetchJob job) {
  const auto start = SteadyClock::now();
  const StoredResult& result = *job.result;
  std::vector<std::vector<uint8_t>> inline_data(job.tensors.size());
  std::vector<FetchedRange> ranges;
  std::vector<TensorCopy> copies;
  uint64_t bytes = 0;
  for (size_t i = 0; i < job.tensors.size(); ++i) {
    const StoredTensor& t = result.tensors[job.tensors[i]];
    FetchedRange range;
    range.tensor = job.tensors[i];
    uint8_t* destination = nullptr;
    if (job.destination) {
      range.offset = job.offsets[i];
      destination = job.destination.base() + job.offsets[i];
    } else {
      inline_data[i].resize(t.bytes);
      range.data = &inline_data[i];
      destination = inline_data[i].data();
    }
    if (t.bytes > 0) copies.push_back(TensorCopy{&t.tensor, destination});
    bytes += t.bytes;
    ranges.push_back(range);
  }
  const Responder answer = responder(job.context);
  if (Status copied = copy_tensors_to_host(device_.runtime(), copies); !copied.is_ok()) {
    answer.fail(copied.with_context("fetching the tensors"));
    return;
  }
  job.destination.reset();
  const uint64_t copy_ns = ns_between(start, SteadyClock::now());
  const bool released = job.release && sinks_.store.release(job.context.client(), result.id);
  metrics_.record_fetch(bytes, copy_ns);
  answer.finish(fetch_response(answer.request_id(), result, ranges, copy_ns, released));
}

void GpuWorker::run_control(ControlJob job) {
  auto bytes = job.run(device_);
  if (!job.reply) return;
  if (bytes.is_ok()) {
    sinks_.outbox.push(OutgoingReply{*job.reply, std::move(bytes).value(), StatusCode::kOk, true});
  } else {
    log_with_fields(LogLevel::kWarning, job.what + " failed: " + bytes.status().to_string(),
                    request_log_fields(*job.reply));
    sinks_.outbox.push(
        OutgoingReply{*job.reply, error_response(job.reply->request_id, bytes.status()), bytes.status().code(), true});
  }
}

}  // namespace recon::daemon
