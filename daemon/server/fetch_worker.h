// FetchWorker: the thread that copies one device's results out for Fetch, beside the GpuWorker
// that computes them. Its copies go through its own OneShot on the device's copy queue
// (gpu::Context::copy_queue), so that a client fetching a result never stalls the next batch, and
// a batch never delays a fetch (before, both ran on the one worker and took turns: 16 clients
// fetching everything halved the throughput). A result is fetched only after its compute finished
// (results are stored after their fence), and the FetchWork holds it until the copy is done.
// It takes the device's fetch lane of the Scheduler (Scheduler::next_fetch) and answers through
// the Outbox like the GpuWorker. Liveness: heartbeat() as GpuWorker's.
#pragma once

#include <chrono>
#include <memory>

#include "daemon/server/worker_thread.h"
#include "daemon/serving/device.h"
#include "daemon/serving/metrics.h"
#include "daemon/serving/responder.h"
#include "daemon/serving/scheduler.h"
#include "gpu/one_shot.h"

namespace recon::daemon {

class FetchWorker {
 public:
  FetchWorker(Device& device, Scheduler& scheduler, const AnswerSinks& sinks, Metrics& metrics,
              std::chrono::milliseconds idle_tick);
  FetchWorker(const FetchWorker&) = delete;
  FetchWorker& operator=(const FetchWorker&) = delete;

  void start() {
    thread_.start([this] { loop(); });
  }
  // Waits for the thread, which ends once the scheduler is closed and the lane is empty.
  void join() { thread_.join(); }
  bool running() const { return thread_.running(); }
  SteadyClock::time_point heartbeat() const { return thread_.heartbeat(); }

 private:
  void loop();
  // `copies`: the thread's OneShot on the copy queue, made when the thread starts (or why not:
  // then every fetch fails with it, and the daemon serves everything else).
  void run(FetchWork job, Result<std::unique_ptr<gpu::OneShot>>& copies);

  Device& device_;
  Scheduler& scheduler_;
  const AnswerSinks& sinks_;
  Metrics& metrics_;
  const std::chrono::milliseconds idle_tick_;
  WorkerThread thread_;  // last: destroyed (joined) first
};

}  // namespace recon::daemon
