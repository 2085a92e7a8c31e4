// GpuWorker: see gpu_worker.h.
#include "daemon/server/gpu_worker.h"

#include <utility>

#include "daemon/serving/mast3r/mast3r_instance.h"
#include "daemon/serving/match/match_instance.h"
#include "daemon/serving/retrieval/retrieval_instance.h"
#include "gpu/log.h"

namespace recon::daemon {
GpuWorker::GpuWorker(Device& device, Scheduler& scheduler, ResultStore& store, Metrics& metrics, Outbox& outbox,
                     WorkerOptions options)
    : device_(device),
      scheduler_(scheduler),
      metrics_(metrics),
      sinks_{store, outbox, device.index()},
      options_(std::move(options)),
      input_{&device.runtime(), device.index(), options_.gpu_preprocess},
      context_{sinks_, metrics_, input_, options_},
      fetcher_(device, scheduler, sinks_, metrics, options_.idle_tick) {
  beat();
}

GpuWorker::~GpuWorker() {
  join();
}

void GpuWorker::start() {
  running_ = true;
  thread_ = std::thread([this] { loop(); });
  fetcher_.start();
}

void GpuWorker::join() {
  if (thread_.joinable()) thread_.join();
  fetcher_.join();
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
      const auto* pairs = std::get_if<std::vector<PairWork>>(&work);
      scheduler_.finished(device_.index(), pairs != nullptr ? pairs->size() : 1);
      beat();
      continue;
    }
    if (auto* pairs = std::get_if<std::vector<PairWork>>(&work)) {
      const size_t count = pairs->size();
      run_pairs(std::move(*pairs));
      scheduler_.finished(device_.index(), count);
    } else if (auto* control = std::get_if<ControlWork>(&work)) {
      run_control(std::move(*control));
      scheduler_.finished(device_.index(), 1);
    } else if (auto* solo = std::get_if<SoloWork>(&work)) {
      run_solo(std::move(*solo));
      scheduler_.finished(device_.index(), 1);
    }
    beat();
  }
  running_ = false;
}

bool GpuWorker::skip_model_work(Work& work) {
  const Status skipped = unavailable("model work is skipped (test hook)");
  if (auto* pairs = std::get_if<std::vector<PairWork>>(&work)) {
    for (const PairWork& job : *pairs) context_.responder(job.context).fail(skipped);
    return true;
  }
  if (auto* solo = std::get_if<SoloWork>(&work)) {
    if (auto* step = std::get_if<DeviceStep>(solo)) {
      step->drop(skipped);
      return true;
    }
    context_.responder(std::visit([](const auto& j) -> const RequestContext& { return j.context; }, *solo))
        .fail(skipped);
    return true;
  }
  if (auto* control = std::get_if<ControlWork>(&work); control != nullptr && control->context) {
    context_.responder(*control->context).fail(skipped);
    return true;
  }
  return false;  // the start-up (a control job without a context)
}

// Each work item's kind runs it (run_work in its instance's header), finding its ready instance.
void GpuWorker::run_pairs(std::vector<PairWork> pairs) {
  run_work(std::move(pairs), device_, context_);
}

void GpuWorker::run_solo(SoloWork job) {
  std::visit([this](auto& work) { run_work(std::move(work), device_, context_); }, job);
}

void GpuWorker::run_control(ControlWork job) {
  auto bytes = job.run(device_);
  if (!job.context) return;
  const Responder answer = context_.responder(*job.context);
  if (bytes.is_ok()) {
    answer.finish(std::move(bytes).value());
    return;
  }
  // A management failure is the administrator's business whatever its code: a warning.
  answer.fail(bytes.status(), LogLevel::kWarning, job.what);
}

}  // namespace recon::daemon
