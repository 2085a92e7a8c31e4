// GpuWorker: the one thread that drives one device. It takes work from the Scheduler — batches of
// pairs, InferBatch and Match requests, fetches, control jobs (start-up, Warmup, LoadModel, UnloadModel) — runs it on
// the device's engines, stores results (ResultStore), records metrics and posts every answer to the Outbox. A failure
// fails only the requests it concerns: a batch that runs out of device memory is retried pair by pair, and only the
// pairs that still fail get RESOURCE_EXHAUSTED. Liveness: heartbeat() advances whenever the worker is idle or finishes
// a unit of work; the I/O thread sends WATCHDOG=1 only while every worker's heartbeat is fresh, so a hung GPU call
// stops the pings.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "daemon/server/device.h"
#include "daemon/server/metrics.h"
#include "daemon/server/outbox.h"
#include "daemon/server/responder.h"
#include "daemon/server/result_store.h"
#include "daemon/server/scheduler.h"
#include "gpu/models/match/match.h"

namespace recon::daemon {

struct WorkerOptions {
  uint32_t max_batch = 1;
  // How long the worker sleeps between heartbeats when idle.
  std::chrono::milliseconds idle_tick{250};
  // Test hook: runs before every pair batch on the worker thread (e.g. to hold a request in
  // flight). Empty in the daemon.
  std::function<void()> before_batch;
  // Test hook (the request fuzzer): while it returns true, every job that would run a model
  // (pairs, InferBatch, Match, EncodeRetrieval, Warmup/LoadModel/UnloadModel) is answered
  // UNAVAILABLE at once, without the device; fetches and the start-up still run. Empty in the daemon.
  std::function<bool()> skip_models;
  // Image preparation on the GPU (image_input.h); false: on this thread's CPU.
  bool gpu_preprocess = true;
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
    PairJob job;
    std::array<ModelImage, 2> pixels;
    uint64_t input_ns = 0;
    SteadyClock::time_point picked;
  };

  void loop();
  void beat();
  // skip_models: answers `work` without the device; false for work that runs anyway.
  bool skip_model_work(Work& work);
  // InferPair requests that the Scheduler batched (same BatchKey).
  void run_pairs(std::vector<PairJob> pairs);
  // Runs `ready` (same key, an allowed batch size) on the engine and answers each pair.
  void run_engine(std::vector<Ready>& ready);
  void finish_pair(Ready& ready, const gpu::Mast3rResult& result, size_t index, size_t batch, uint64_t compute_ns);
  // gpu_worker_batch.cpp: InferBatch; gpu_worker_match.cpp: Match; gpu_worker_retrieval.cpp:
  // EncodeRetrieval.
  void run_infer_batch(InferBatchJob job);
  void run_match(MatchJob job);
  // A recorded matcher for this shape and options, kept across requests (building one records a
  // graph and allocates its scratch: tens of ms, against ~2 ms to run it on a 512x384 pair).
  Result<gpu::FastMatcher*> matcher_for(const gpu::MatchShape& shape, const gpu::FastMatchOptions& options);
  void run_encode_retrieval(RetrievalJob job);
  void run_fetch(FetchJob job);
  void run_control(ControlJob job);
  Responder responder(const RequestContext& context) const { return Responder(context, sinks_); }
  // Why device_.engine(model) is null: the model's state, or NOT_FOUND.
  Status engine_missing(const std::string& model) const;

  Device& device_;
  Scheduler& scheduler_;
  Metrics& metrics_;
  const AnswerSinks sinks_;
  const WorkerOptions options_;
  const InputPreparation input_;
  std::vector<std::unique_ptr<gpu::FastMatcher>> matchers_;  // most recently used last; worker thread only
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<SteadyClock::rep> heartbeat_{0};
};

}  // namespace recon::daemon
