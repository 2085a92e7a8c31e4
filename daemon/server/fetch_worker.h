// FetchWorker: the thread that copies one device's results out for Fetch, beside the GpuWorker
// that computes them. Its copies go through its own OneShot on the device's copy queue
// (gpu::Context::copy_queue), so that a client fetching a result never stalls the next batch, and
// a batch never delays a fetch (before, both ran on the one worker and took turns: 16 clients
// fetching everything halved the throughput). A result is fetched only after its compute finished
// (results are stored after their fence), and the FetchWork holds it until the copy is done.
// It takes the device's fetch lane of the Scheduler (Scheduler::next_fetch) and answers through
// the Outbox like the GpuWorker. Liveness: heartbeat() as GpuWorker's.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "daemon/server/metrics.h"
#include "daemon/server/responder.h"
#include "daemon/server/scheduler.h"
#include "daemon/serving/device.h"
#include "gpu/one_shot.h"

namespace recon::daemon {

class FetchWorker {
 public:
  FetchWorker(Device& device, Scheduler& scheduler, const AnswerSinks& sinks, Metrics& metrics,
              std::chrono::milliseconds idle_tick);
  FetchWorker(const FetchWorker&) = delete;
  FetchWorker& operator=(const FetchWorker&) = delete;
  ~FetchWorker();  // joins

  void start();
  // Waits for the thread, which ends once the scheduler is closed and the lane is empty.
  void join();
  bool running() const { return running_.load(); }
  SteadyClock::time_point heartbeat() const {
    return SteadyClock::time_point(SteadyClock::duration(heartbeat_.load(std::memory_order_relaxed)));
  }

 private:
  void loop();
  void beat();
  // `copies`: the thread's OneShot on the copy queue, made when the thread starts (or why not:
  // then every fetch fails with it, and the daemon serves everything else).
  void run(FetchWork job, Result<std::unique_ptr<gpu::OneShot>>& copies);

  Device& device_;
  Scheduler& scheduler_;
  const AnswerSinks& sinks_;
  Metrics& metrics_;
  const std::chrono::milliseconds idle_tick_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<SteadyClock::rep> heartbeat_{0};
};

}  // namespace recon::daemon
