// Metrics: recond's counters and latency windows, in Triton's vocabulary (request success and
// failure, inference count, execution count — their ratio is the mean batch size —, cumulative
// queue/input/compute/output/total time) plus percentiles over the most recent requests. Read
// by GetStatus (daemon/server/status_report.h) and the Prometheus endpoint (prometheus_text.h there).
// Thread safety: every member may be called from any thread; mutex_ guards everything (updates
// happen a few times per request: a lock is cheaper than getting lock-free windows right).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/serving/result_store.h"
#include "gpu/status.h"

namespace recon::daemon {

enum class Stage { kQueue, kInput, kCompute, kOutput, kTotal };
inline constexpr size_t kStageCount = 5;
const char* stage_name(Stage stage);  // "queue", "input", "compute", "output", "total"

struct LatencySummary {
  Stage stage = Stage::kTotal;
  uint64_t count = 0;  // samples in the window
  uint64_t p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;
};

// The last `capacity` samples of one stage; percentiles by sorting a copy (cheap at this size,
// and only status and scrapes ask).
class LatencyWindow {
 public:
  explicit LatencyWindow(size_t capacity = 4096) : samples_(capacity) {}
  void record(uint64_t us);
  LatencySummary summarize(Stage stage) const;

 private:
  std::vector<uint64_t> samples_;
  size_t next_ = 0;
  size_t filled_ = 0;
};

// One model's counters (Triton's per-model statistics), for every kind: requests answered with a
// result, inferences (rows: pairs, the batch dimension of onnx requests, a retrieval's images, one
// per match), engine calls, and the cumulative queue and compute time of its requests.
struct ModelCounters {
  uint64_t requests = 0;
  uint64_t inferences = 0;
  uint64_t executions = 0;
  uint64_t queue_us = 0;
  uint64_t compute_us = 0;
};

struct MetricsSnapshot {
  uint64_t requests_ok = 0;
  uint64_t requests_failed = 0;
  std::array<uint64_t, 9> failures_by_code{};  // indexed by StatusCode
  uint64_t inferences = 0;                     // rows run (pairs, and the other kinds' rows)
  uint64_t executions = 0;                     // engine calls (batches)
  std::array<uint64_t, kStageCount> cumulative_us{};
  std::vector<LatencySummary> latency;  // one per stage
  uint64_t fetches = 0;
  uint64_t fetch_bytes = 0;
  uint64_t fetch_ns = 0;
  uint64_t batch_requests = 0;  // InferBatch requests run (their pairs count in inferences)
  uint64_t batch_pairs = 0;
  uint64_t match_requests = 0;      // Match requests run
  uint64_t matches = 0;             // matches they returned
  uint64_t retrieval_requests = 0;  // EncodeRetrieval requests run
  uint64_t retrieval_images = 0;
  double pairs_per_s = 0;
  uint32_t window_s = 0;
  std::map<std::string, ModelCounters> models;  // by model name
};

class Metrics {
 public:
  static constexpr uint32_t kThroughputWindowS = 60;

  Metrics() = default;
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // One answered request (every ZeroMQ request counts once).
  void record_request(StatusCode code);
  // One engine call of `model` over `batch` rows (pairs, onnx rows, retrieval images, one match).
  void record_execution(const std::string& model, uint32_t batch, SteadyClock::time_point now = SteadyClock::now());
  // The stages of one successful inference of `model`.
  void record_timings(const std::string& model, const RequestTimings& timings);
  void record_fetch(uint64_t bytes, uint64_t ns);
  // One InferBatch that ran `pairs` pairs (record_execution counts the engine call).
  void record_batch(uint64_t pairs);
  // One Match that returned `matches` matches.
  void record_match(uint64_t matches);
  // One EncodeRetrieval over `images` images.
  void record_retrieval(uint64_t images);

  MetricsSnapshot snapshot(SteadyClock::time_point now = SteadyClock::now()) const;

 private:
  mutable std::mutex mutex_;
  MetricsSnapshot counters_;  // latency/pairs_per_s unused here
  std::array<LatencyWindow, kStageCount> windows_;
  // Pairs finished per second, for the last kThroughputWindowS seconds (ring by epoch second).
  std::array<uint64_t, kThroughputWindowS> pairs_by_second_{};
  std::array<int64_t, kThroughputWindowS> second_of_bucket_{};
  SteadyClock::time_point start_ = SteadyClock::now();
};

}  // namespace recon::daemon
