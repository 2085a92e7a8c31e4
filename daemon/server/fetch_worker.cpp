// FetchWorker: see fetch_worker.h.
#include "daemon/server/fetch_worker.h"

#include <string>
#include <utility>
#include <vector>

#include "daemon/server/responses.h"
#include "daemon/serving/region_import.h"
#include "gpu/log.h"
#include "gpu/tensor_copies.h"

namespace recon::daemon {

FetchWorker::FetchWorker(Device& device, Scheduler& scheduler, const AnswerSinks& sinks, Metrics& metrics,
                         std::chrono::milliseconds idle_tick)
    : device_(device), scheduler_(scheduler), sinks_(sinks), metrics_(metrics), idle_tick_(idle_tick) {}

void FetchWorker::loop() {
  gpu::Context& context = device_.runtime().context();
  auto copies = gpu::OneShot::create(context.device(), context.copy_queue());
  if (!copies.is_ok()) {
    log_error("Device " + std::to_string(device_.index()) + " cannot copy results out: " + copies.status().to_string());
  }
  while (true) {
    FetchWork job;
    const Scheduler::Wait wait = scheduler_.next_fetch(device_.index(), idle_tick_, job);
    thread_.beat();
    if (wait == Scheduler::Wait::kClosed) break;
    if (wait == Scheduler::Wait::kIdle) continue;
    run(std::move(job), copies);
    scheduler_.fetch_finished(device_.index());
    thread_.beat();
  }
}

void FetchWorker::run(FetchWork job, Result<std::unique_ptr<gpu::OneShot>>& copies) {
  const auto start = SteadyClock::now();
  const StoredResult& result = *job.result;
  std::vector<std::vector<uint8_t>> inline_data(job.tensors.size());
  std::vector<FetchedRange> ranges;
  std::vector<gpu::TensorCopy> tensor_copies;
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
    if (t.bytes > 0) tensor_copies.push_back(gpu::TensorCopy{&t.tensor, destination});
    bytes += t.bytes;
    ranges.push_back(range);
  }
  const Responder answer(job.context, sinks_);
  if (device_.lost()) {
    answer.fail(device_.lost_status());
    return;
  }
  if (!copies.is_ok()) {
    answer.fail(copies.status().with_context("fetching the tensors"));
    return;
  }
  const Status copied = gpu::copy_tensors_to_host(device_.runtime(), **copies, tensor_copies,
                                                  region_import_on(job.destination, device_.index()));
  if (!copied.is_ok()) {
    answer.fail(copied.with_context("fetching the tensors"));
    return;
  }
  job.destination.reset();
  const uint64_t copy_ns = ns_between(start, SteadyClock::now());
  const bool released = job.release && sinks_.store.release(job.context.client(), result.id);
  metrics_.record_fetch(bytes, copy_ns);
  answer.finish(fetch_response(answer.request_id(), result, ranges, copy_ns, released));
}

}  // namespace recon::daemon
