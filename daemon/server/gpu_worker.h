// GpuWorker: the threads that drive one device. Its compute thread takes work from the Scheduler —
// batches (InferPair, batched onnx requests), requests that run alone, control jobs (start-up, Warmup, LoadModel,
// UnloadModel), jobs' device steps — runs it on the device's model instances, stores results
// (ResultStore), records metrics and posts every answer to the Outbox. Its FetchWorker copies
// results out beside it (fetch_worker.h). A failure fails only the requests it concerns: a batch
// of pairs that runs out of device memory is retried pair by pair, and only the pairs that still fail get
// RESOURCE_EXHAUSTED. Liveness: heartbeat() advances whenever a thread is idle or finishes a unit
// of work (the older of the two counts); the I/O thread sends WATCHDOG=1 only while every
// worker's heartbeat is fresh, so a hung GPU call stops the pings.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "daemon/server/fetch_worker.h"
#include "daemon/server/outbox.h"
#include "daemon/server/worker_thread.h"
#include "daemon/serving/device.h"
#include "daemon/serving/metrics.h"
#include "daemon/serving/result_store.h"
#include "daemon/serving/scheduler.h"
#include "daemon/serving/worker_context.h"

namespace recon::daemon {

class GpuWorker {
 public:
  GpuWorker(Device& device, Scheduler& scheduler, ResultStore& store, Metrics& metrics, Outbox& outbox,
            WorkerOptions options);
  GpuWorker(const GpuWorker&) = delete;
  GpuWorker& operator=(const GpuWorker&) = delete;
  ~GpuWorker();  // joins

  void start();
  // Waits for the thread, which ends once the scheduler is closed and its work is done.
  void join();
  bool running() const { return thread_.running() || fetcher_.running(); }

  // Steady-clock time of the last sign of progress (the staler of the two threads').
  SteadyClock::time_point heartbeat() const { return std::min(thread_.heartbeat(), fetcher_.heartbeat()); }

 private:
  void loop();
  // Answers `work` with `why` without the device (skip_models, a lost device); false for work
  // that runs anyway (the start-up).
  bool answer_without_device(Work& work, const Status& why);
  // Takes the device out of rotation once the driver (or the test hook) reports it lost.
  void check_lost();
  // The model kinds run their work items (run_work in mast3r_instance.h, retrieval_instance.h,
  // match_instance.h; a job's DeviceStep runs itself).
  void run_batch(std::vector<BatchWork> batch);
  void run_solo(SoloWork job);
  void run_control(ControlWork job);

  Device& device_;
  Scheduler& scheduler_;
  Metrics& metrics_;
  const AnswerSinks sinks_;
  const WorkerOptions options_;
  const InputPreparation input_;
  const WorkerContext context_;  // what the instances use of this worker
  FetchWorker fetcher_;
  WorkerThread thread_;
};

}  // namespace recon::daemon
