// GpuWorker: the one thread that drives one device. It takes work from the Scheduler — pair
// batches, fetches, control jobs (start-up, Warmup, LoadModel, UnloadModel) — runs it on the
// device's engines, stores results (ResultStore), records metrics and posts every answer to the
// Outbox. A failure fails only the requests it concerns: a batch that runs out of device memory
// is retried pair by pair, and only the pairs that still fail get RESOURCE_EXHAUSTED.
// Liveness: heartbeat() advances whenever the worker is idle or finishes a unit of work; the
// I/O thread sends WATCHDOG=1 only while every worker's heartbeat is fresh, so a hung GPU call
// stops the pings.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "daemon/server/device.h"
#include "daemon/server/metrics.h"
#include "daemon/server/outbox.h"
#include "daemon/server/result_store.h"
#include "daemon/server/scheduler.h"

namespace recon::daemon {

struct WorkerOptions {
  uint32_t max_batch = 1;
  // How long the worker sleeps between heartbeats when idle.
  std::chrono::milliseconds idle_tick{250};
  // Test hook: runs before every pair batch on the worker thread (e.g. to hold a request in
  // flight). Empty in the daemon.
  std::function<void()> before_batch;
};

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
  bool running() const { return running_.load(); }

  // Steady-clock time of the last sign of progress.
  SteadyClock::time_point heartbeat() const {
    return SteadyClock::time_point(SteadyClock::duration(heartbeat_.load(std::memory_order_relaxed)));
  }

 private:
  struct Ready {
    InferJob job;
    std::array<std::vector<uint8_t>, 2> pixels;
    uint64_t input_ns = 0;
    SteadyClock::time_point picked;
  };

  void loop();
  void beat();
  void run_batch(std::vector<InferJob> batch);
  // Runs `ready` (same key, an allowed batch size) on the engine and answers each pair.
  void run_engine(std::vector<Ready>& ready);
  void finish_pair(Ready& ready, const gpu::Mast3rResult& result, size_t index, size_t batch, uint64_t compute_ns);
  void run_fetch(FetchJob job);
  void run_control(ControlJob job);
  void answer(const ReplyTarget& target, std::vector<uint8_t> bytes, StatusCode code);
  void answer_error(const ReplyTarget& target, const Status& status);

  Device& device_;
  Scheduler& scheduler_;
  ResultStore& store_;
  Metrics& metrics_;
  Outbox& outbox_;
  const WorkerOptions options_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<SteadyClock::rep> heartbeat_{0};
};

}  // namespace recon::daemon
