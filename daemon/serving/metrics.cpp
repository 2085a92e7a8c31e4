// Metrics: see metrics.h.
#include "daemon/serving/metrics.h"

#include <algorithm>

namespace recon::daemon {

const char* stage_name(Stage stage) {
  switch (stage) {
    case Stage::kQueue:
      return "queue";
    case Stage::kInput:
      return "input";
    case Stage::kCompute:
      return "compute";
    case Stage::kOutput:
      return "output";
    case Stage::kTotal:
      return "total";
  }
  return "unknown";
}

void LatencyWindow::record(uint64_t us) {
  samples_[next_] = us;
  next_ = (next_ + 1) % samples_.size();
  filled_ = std::min(filled_ + 1, samples_.size());
}

LatencySummary LatencyWindow::summarize(Stage stage) const {
  LatencySummary out;
  out.stage = stage;
  out.count = filled_;
  if (filled_ == 0) return out;
  std::vector<uint64_t> sorted(samples_.begin(), samples_.begin() + static_cast<ptrdiff_t>(filled_));
  std::sort(sorted.begin(), sorted.end());
  // Nearest-rank percentiles.
  auto rank = [&](double p) {
    size_t index = static_cast<size_t>(p * static_cast<double>(sorted.size()) + 0.999999);
    index = std::clamp<size_t>(index, 1, sorted.size());
    return sorted[index - 1];
  };
  out.p50_us = rank(0.50);
  out.p90_us = rank(0.90);
  out.p99_us = rank(0.99);
  out.max_us = sorted.back();
  return out;
}

void Metrics::record_request(StatusCode code) {
  std::lock_guard lock(mutex_);
  if (code == StatusCode::kOk) {
    ++counters_.requests_ok;
  } else {
    ++counters_.requests_failed;
    const auto index = static_cast<size_t>(code);
    if (index < counters_.failures_by_code.size()) ++counters_.failures_by_code[index];
  }
}

void Metrics::record_execution(const std::string& model, uint32_t batch, SteadyClock::time_point now) {
  std::lock_guard lock(mutex_);
  ++counters_.executions;
  counters_.inferences += batch;
  ModelCounters& per_model = counters_.models[model];
  ++per_model.executions;
  per_model.inferences += batch;
  const int64_t second = std::chrono::duration_cast<std::chrono::seconds>(now - start_).count();
  const size_t bucket = static_cast<size_t>(second) % kThroughputWindowS;
  if (second_of_bucket_[bucket] != second) {
    second_of_bucket_[bucket] = second;
    pairs_by_second_[bucket] = 0;
  }
  pairs_by_second_[bucket] += batch;
}

void Metrics::record_timings(const std::string& model, const RequestTimings& t) {
  const uint64_t values[kStageCount] = {t.queue_ns, t.input_ns, t.compute_ns, t.output_ns, t.total_ns};
  std::lock_guard lock(mutex_);
  ModelCounters& per_model = counters_.models[model];
  ++per_model.requests;
  per_model.queue_us += t.queue_ns / 1000;
  per_model.compute_us += t.compute_ns / 1000;
  for (size_t i = 0; i < kStageCount; ++i) {
    counters_.cumulative_us[i] += values[i] / 1000;
    windows_[i].record(values[i] / 1000);
  }
}

void Metrics::record_fetch(uint64_t bytes, uint64_t ns) {
  std::lock_guard lock(mutex_);
  ++counters_.fetches;
  counters_.fetch_bytes += bytes;
  counters_.fetch_ns += ns;
}

void Metrics::record_batch(uint64_t pairs) {
  std::lock_guard lock(mutex_);
  ++counters_.batch_requests;
  counters_.batch_pairs += pairs;
}

void Metrics::record_match(uint64_t matches) {
  std::lock_guard lock(mutex_);
  ++counters_.match_requests;
  counters_.matches += matches;
}

void Metrics::record_retrieval(uint64_t images) {
  std::lock_guard lock(mutex_);
  ++counters_.retrieval_requests;
  counters_.retrieval_images += images;
}

MetricsSnapshot Metrics::snapshot(SteadyClock::time_point now) const {
  std::lock_guard lock(mutex_);
  MetricsSnapshot out = counters_;
  out.latency.clear();
  for (size_t i = 0; i < kStageCount; ++i) out.latency.push_back(windows_[i].summarize(static_cast<Stage>(i)));
  const int64_t second = std::chrono::duration_cast<std::chrono::seconds>(now - start_).count();
  // Full seconds of the window (the current one is partial), at least one.
  const int64_t span = std::clamp<int64_t>(second, 1, kThroughputWindowS);
  uint64_t pairs = 0;
  for (size_t b = 0; b < kThroughputWindowS; ++b) {
    const int64_t age = second - second_of_bucket_[b];
    if (pairs_by_second_[b] != 0 && age >= 0 && age < span) pairs += pairs_by_second_[b];
  }
  out.window_s = static_cast<uint32_t>(span);
  out.pairs_per_s = static_cast<double>(pairs) / static_cast<double>(span);
  return out;
}

}  // namespace recon::daemon
