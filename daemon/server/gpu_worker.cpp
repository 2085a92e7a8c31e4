// GpuWorker: see gpu_worker.h.
#include "daemon/server/gpu_worker.h"

#include <utility>

#include "gpu/log.h"

namespace recon::daemon {
GpuWorker::GpuWorker(Device& device, Scheduler& scheduler, ResultStore& store, Metrics& metrics, Outbox& outbox,
                     WorkerOptions options)
    : device_(device),
      scheduler_(scheduler),
      metrics_(metrics),
      sinks_{store, outbox, device.index(), &metrics},
      options_(std::move(options)),
      input_{&device.runtime(), device.index(), options_.gpu_preprocess},
      context_{sinks_, metrics_, input_, options_},
      fetcher_(device, scheduler, sinks_, metrics, options_.idle_tick) {}

GpuWorker::~GpuWorker() {
  join();
}

void GpuWorker::start() {
  thread_.start([this] { loop(); });
  fetcher_.start();
}

void GpuWorker::join() {
  thread_.join();
  fetcher_.join();
}

void GpuWorker::loop() {
  while (true) {
    Work work;
    const Scheduler::Wait wait = scheduler_.next(device_.index(), options_.idle_tick, work);
    thread_.beat();
    if (wait == Scheduler::Wait::kClosed) break;
    if (wait == Scheduler::Wait::kIdle) {
      check_lost();
      continue;
    }
    auto* batch = std::get_if<std::vector<BatchWork>>(&work);
    const size_t count = batch != nullptr ? batch->size() : 1;
    const bool skip = options_.skip_models && options_.skip_models();
    if ((skip || device_.lost()) &&
        answer_without_device(work, skip ? unavailable("model work is skipped (test hook)") : device_.lost_status())) {
      scheduler_.finished(device_.index(), count);
      thread_.beat();
      continue;
    }
    // Counted before they run, so that a client that has its answer sees them counted.
    if (batch != nullptr) {
      device_.count_work(count);
      run_batch(std::move(*batch));
    } else if (auto* control = std::get_if<ControlWork>(&work)) {
      run_control(std::move(*control));
    } else if (auto* solo = std::get_if<SoloWork>(&work)) {
      device_.count_work(1);
      run_solo(std::move(*solo));
    }
    scheduler_.finished(device_.index(), count);
    check_lost();
    thread_.beat();
  }
}

void GpuWorker::check_lost() {
  if (device_.lost()) return;
  const bool hook = options_.device_lost && options_.device_lost(device_.index());
  if (!hook && !device_.runtime().context().device_lost()) return;
  const Status why =
      unavailable("GPU " + std::to_string(device_.index()) + " (" + device_.runtime().caps().device_name +
                  ") was lost (VK_ERROR_DEVICE_LOST): it is out of rotation with its results");
  device_.mark_lost(why);
  log_error(why.message() + "; the daemon serves from its other GPUs, if any");
}

bool GpuWorker::answer_without_device(Work& work, const Status& why) {
  if (auto* batch = std::get_if<std::vector<BatchWork>>(&work)) {
    for (const BatchWork& job : *batch) context_.responder(job.context).fail(why);
    return true;
  }
  if (auto* solo = std::get_if<SoloWork>(&work)) {
    if (auto* step = std::get_if<DeviceStep>(solo)) {
      step->drop(why);
      return true;
    }
    context_.responder(std::visit([](const auto& j) -> const RequestContext& { return j.context; }, *solo)).fail(why);
    return true;
  }
  if (auto* control = std::get_if<ControlWork>(&work); control != nullptr && control->context) {
    context_.responder(*control->context).fail(why);
    return true;
  }
  return false;  // the start-up (a control job without a context)
}

// Each work item's kind runs it (run_work in work_items.h: a batch's `run`, a KindWork's body, a
// job's step), finding its ready instance.
void GpuWorker::run_batch(std::vector<BatchWork> batch) {
  run_work(std::move(batch), device_, context_);
}

void GpuWorker::run_solo(SoloWork job) {
  std::visit([this](auto& work) { run_work(std::move(work), device_, context_); }, job);
}

void GpuWorker::run_control(ControlWork job) {
  auto bytes = job.run(device_);
  if (!job.context) return;
  const Responder answer = context_.responder(*job.context);
  if (bytes.is_ok()) {
    if (bytes->has_value()) answer.finish(std::move(**bytes));
    return;
  }
  // A management failure is the administrator's business whatever its code: a warning.
  answer.fail(bytes.status(), LogLevel::kWarning, job.what);
}

}  // namespace recon::daemon
