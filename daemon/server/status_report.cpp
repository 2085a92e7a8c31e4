// StatusReport rendering: see status_report.h.
#include "daemon/server/status_report.h"

#include <algorithm>
#include <vector>

#include "daemon/ipc/wire_convert.h"
#include "daemon/server/responses.h"

namespace recon::daemon {
namespace {

flatbuffers::Offset<wire::PoolStats> build_pool(flatbuffers::FlatBufferBuilder& builder, const gpu::PoolStats& s) {
  return wire::CreatePoolStats(builder, s.reserved_bytes, s.in_use_bytes, s.high_water_bytes, s.hits, s.misses,
                               static_cast<uint32_t>(s.blocks));
}

flatbuffers::Offset<wire::DeviceStatus> build_device(flatbuffers::FlatBufferBuilder& builder, const DeviceSnapshot& d) {
  std::vector<flatbuffers::Offset<flatbuffers::String>> caps;
  for (const std::string& c : d.capabilities) caps.push_back(builder.CreateString(c));
  const auto pool = build_pool(builder, d.activations);
  return wire::CreateDeviceStatusDirect(
      builder, d.index, d.name.c_str(), d.vendor_id, d.device_id, d.driver_version.c_str(), d.api_version.c_str(),
      nullptr, &caps, d.device_local_total_bytes, d.device_local_budget_bytes, d.device_local_used_bytes, pool,
      d.weight_bytes, d.result_bytes, d.work_items, d.error.empty() ? nullptr : d.error.c_str());
}

}  // namespace

std::vector<uint8_t> status_response(uint64_t request_id, const ServerSnapshot& s) {
  flatbuffers::FlatBufferBuilder builder(2048);
  std::vector<flatbuffers::Offset<wire::DeviceStatus>> devices;
  // Each model once: every device loads the same models (management runs on all of them), so the
  // first device's entry stands for all, unless another device's has failed (then that one shows).
  std::vector<ModelInfo> shown;
  for (const DeviceSnapshot& d : s.devices) {
    devices.push_back(build_device(builder, d));
    for (const ModelInfo& m : d.models) {
      auto same = std::find_if(shown.begin(), shown.end(), [&](const ModelInfo& x) { return x.name == m.name; });
      if (same == shown.end()) {
        shown.push_back(m);
      } else if (m.state == ModelState::kFailed && same->state != ModelState::kFailed) {
        *same = m;
      }
    }
  }
  std::vector<flatbuffers::Offset<wire::ModelStatus>> models;
  for (const ModelInfo& m : shown) {
    const auto counters = s.metrics.models.find(m.name);
    models.push_back(
        build_model_status(builder, m, counters == s.metrics.models.end() ? ModelCounters{} : counters->second));
  }
  const auto queue =
      wire::CreateQueueStats(builder, s.queue.pending, s.queue.in_flight, s.queue.capacity, s.queue.oldest_wait_ms);
  const MetricsSnapshot& m = s.metrics;
  const auto throughput = wire::CreateThroughputStats(builder, m.requests_ok, m.requests_failed, m.inferences,
                                                      m.executions, m.pairs_per_s, m.window_s);
  std::vector<flatbuffers::Offset<wire::LatencyStats>> latency;
  for (const LatencySummary& l : m.latency) {
    latency.push_back(
        wire::CreateLatencyStatsDirect(builder, stage_name(l.stage), l.count, l.p50_us, l.p90_us, l.p99_us, l.max_us));
  }
  std::vector<flatbuffers::Offset<wire::SessionStatus>> sessions;
  for (const SessionSnapshot& session : s.sessions) {
    sessions.push_back(wire::CreateSessionStatusDirect(builder, session.client_name.c_str(), session.pid, session.uid,
                                                       session.regions.regions, session.regions.bytes,
                                                       session.results.handles, session.results.bytes));
  }
  const auto body = wire::CreateStatusReportDirect(builder, s.server_version.c_str(), s.state, s.uptime_s, &devices,
                                                   &models, queue, throughput, &latency, s.sessions_open,
                                                   s.regions.mapped_bytes, s.sessions.empty() ? nullptr : &sessions);
  finish_response(builder, request_id, wire::ResponseBody::StatusReport, body.Union());
  return to_bytes(builder);
}

}  // namespace recon::daemon
