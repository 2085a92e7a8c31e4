// Prometheus rendering: see prometheus_text.h.
#include "daemon/server/prometheus_text.h"

#include <cstdio>
#include <tuple>

#include "gpu/status.h"

namespace recon::daemon {
namespace {

class Writer {
 public:
  void family(const char* name, const char* type, const char* help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  void sample(const char* name, const std::string& labels, double value) {
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), " %.17g\n", value);
    out_ += buffer;
  }
  void sample(const char* name, const std::string& labels, uint64_t value) {
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    out_ += ' ' + std::to_string(value) + '\n';
  }
  void one(const char* name, const char* type, const char* help, uint64_t value) {
    family(name, type, help);
    sample(name, "", value);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

constexpr const char* kCodeNames[] = {
    "OK",          "INVALID_ARGUMENT", "NOT_FOUND", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
    "UNAVAILABLE", "INTERNAL",         "DATA_LOSS", "UNIMPLEMENTED"};

}  // namespace

std::string prometheus_label(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string prometheus_text(const ServerSnapshot& s) {
  Writer w;
  const MetricsSnapshot& m = s.metrics;
  w.family("recon_up", "gauge", "1 when the daemon is ready, 0 while starting, warming or stopping.");
  w.sample("recon_up", "state=\"" + std::string(daemon_state_name(s.state)) + "\"",
           uint64_t{s.state == wire::DaemonState::READY ? 1u : 0u});
  w.one("recon_uptime_seconds", "gauge", "Seconds since the daemon started.", s.uptime_s);
  w.one("recon_request_success_total", "counter", "Requests answered with a success body.", m.requests_ok);
  w.family("recon_request_failure_total", "counter", "Requests answered with an Error, by code.");
  for (size_t code = 1; code < m.failures_by_code.size(); ++code) {
    w.sample("recon_request_failure_total", std::string("code=\"") + kCodeNames[code] + "\"", m.failures_by_code[code]);
  }
  w.one("recon_inference_count_total", "counter", "Pairs inferred (a batch of n counts n).", m.inferences);
  w.one("recon_inference_exec_count_total", "counter", "Engine executions (inference_count / exec_count = mean batch).",
        m.executions);
  w.one("recon_pending_request_count", "gauge", "Requests queued for the GPU.", s.queue.pending);
  w.one("recon_inflight_request_count", "gauge", "Requests a GPU worker holds.", s.queue.in_flight);
  w.one("recon_queue_rejected_total", "counter", "Requests refused because a queue was full.", s.queue.rejected_full);
  static constexpr const char* kCumulative[] = {
      "recon_inference_queue_duration_us_total", "recon_inference_compute_input_duration_us_total",
      "recon_inference_compute_infer_duration_us_total", "recon_inference_compute_output_duration_us_total",
      "recon_inference_request_duration_us_total"};
  for (size_t i = 0; i < kStageCount; ++i) {
    w.family(kCumulative[i], "counter", "Cumulative microseconds of this stage over successful inferences.");
    w.sample(kCumulative[i], "", m.cumulative_us[i]);
  }
  // Gauges rather than a summary: the quantiles cover a window of recent requests, not the
  // whole life of the process that _sum/_count would have to.
  w.family("recon_inference_latency_us", "gauge", "Latency percentiles of recent inferences (last 4096) by stage.");
  for (const LatencySummary& l : m.latency) {
    const std::string stage = std::string("stage=\"") + stage_name(l.stage) + "\"";
    w.sample("recon_inference_latency_us", stage + ",quantile=\"0.5\"", l.p50_us);
    w.sample("recon_inference_latency_us", stage + ",quantile=\"0.9\"", l.p90_us);
    w.sample("recon_inference_latency_us", stage + ",quantile=\"0.99\"", l.p99_us);
    w.sample("recon_inference_latency_us", stage + ",quantile=\"1\"", l.max_us);
  }
  w.family("recon_inference_pairs_per_second", "gauge", "Pairs per second over the last minute.");
  w.sample("recon_inference_pairs_per_second", "", m.pairs_per_s);
  w.one("recon_fetch_total", "counter", "Fetch requests served.", m.fetches);
  w.one("recon_fetch_bytes_total", "counter", "Bytes copied out by fetches.", m.fetch_bytes);
  w.one("recon_infer_batch_total", "counter", "InferBatch requests run.", m.batch_requests);
  w.one("recon_infer_batch_pairs_total", "counter", "Pairs run by InferBatch requests.", m.batch_pairs);
  w.one("recon_match_total", "counter", "Match requests run.", m.match_requests);
  w.one("recon_matches_total", "counter", "Matches returned by Match requests.", m.matches);
  w.one("recon_encode_retrieval_total", "counter", "EncodeRetrieval requests run.", m.retrieval_requests);
  w.one("recon_encode_retrieval_images_total", "counter", "Images encoded by EncodeRetrieval.", m.retrieval_images);
  w.one("recon_sessions_open", "gauge", "Open client sessions.", s.sessions_open);
  w.one("recon_region_bytes", "gauge", "Bytes of client shared-memory regions mapped.", s.regions.mapped_bytes);
  w.one("recon_regions", "gauge", "Registered client regions.", s.regions.regions);
  w.one("recon_result_handles", "gauge", "Live result handles.", s.results.handles);
  w.one("recon_result_bytes", "gauge", "Device bytes held by result handles.", s.results.bytes);
  w.one("recon_result_handles_expired_total", "counter", "Handles freed by their TTL.", s.handles_expired);
  w.family("recon_pool_bytes", "gauge", "Device buffer pool bytes by device, pool and kind.");
  for (const DeviceSnapshot& d : s.devices) {
    const std::string device = "device=\"" + std::to_string(d.index) + "\"";
    const std::pair<const char*, const gpu::PoolStats*> pools[] = {
        {"activations", &d.activations}, {"weights", &d.weights}, {"staging", &d.staging}};
    for (const auto& [pool, stats] : pools) {
      const std::string labels = device + ",pool=\"" + pool + "\"";
      w.sample("recon_pool_bytes", labels + ",kind=\"reserved\"", stats->reserved_bytes);
      w.sample("recon_pool_bytes", labels + ",kind=\"in_use\"", stats->in_use_bytes);
      w.sample("recon_pool_bytes", labels + ",kind=\"high_water\"", stats->high_water_bytes);
    }
  }
  // Per model, in Triton's vocabulary (nv_inference_count, nv_inference_exec_count, ...).
  const std::tuple<const char*, const char*, uint64_t ModelCounters::*> per_model[] = {
      {"recon_model_request_success_total", "Requests of the model answered with a result.", &ModelCounters::requests},
      {"recon_model_inference_total", "Inferences (rows: pairs, or onnx batch rows) the model ran.",
       &ModelCounters::inferences},
      {"recon_model_execution_total", "Engine calls of the model (inferences / executions = mean batch).",
       &ModelCounters::executions},
      {"recon_model_queue_duration_us_total", "Cumulative queue time of the model's requests.",
       &ModelCounters::queue_us},
      {"recon_model_compute_duration_us_total", "Cumulative compute time of the model's requests.",
       &ModelCounters::compute_us}};
  for (const auto& [name, help, field] : per_model) {
    w.family(name, "counter", help);
    for (const auto& [model, counters] : m.models) {
      w.sample(name, "model=\"" + prometheus_label(model) + "\"", counters.*field);
    }
  }
  w.family("recon_model_ready", "gauge", "1 per loaded model that is ready.");
  for (const DeviceSnapshot& d : s.devices) {
    for (const ModelInfo& model : d.models) {
      w.sample("recon_model_ready",
               "device=\"" + std::to_string(d.index) + "\",model=\"" + prometheus_label(model.name) + "\"",
               uint64_t{model.state == ModelState::kReady ? 1u : 0u});
    }
  }
  return w.take();
}

}  // namespace recon::daemon
