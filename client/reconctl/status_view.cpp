// Text and JSON views of the daemon's status for `reconctl status` and `reconctl models`.
#include "status_view.h"

#include <cstdio>

#include "format.h"

namespace reconctl {
namespace {

using namespace recon::client;

std::string resolutions_text(const std::vector<Resolution>& resolutions) {
  std::vector<std::string> parts;
  parts.reserve(resolutions.size());
  for (const Resolution& r : resolutions) parts.push_back(to_string(r));
  return parts.empty() ? "-" : join(parts, ", ");
}

std::string used_of(uint64_t used, uint64_t total) {
  if (total == 0) return used == 0 ? "-" : format_bytes(used);
  return format_bytes(used) + " / " + format_bytes(total);
}

void write_model_json(JsonWriter& j, const ModelStatus& m) {
  j.begin_object();
  j.key("name").value(m.name).key("kind").value(m.kind).key("state").value(model_state_name(m.state));
  j.key("precision").value(precision_name(m.precision));
  j.key("resolutions").begin_array();
  for (const Resolution& r : m.resolutions) j.value(to_string(r));
  j.end_array();
  j.key("weight_bytes").value(m.weight_bytes).key("error").value(m.error).key("version").value(m.version);
  for (const auto& [key, names] : {std::pair{"inputs", &m.inputs}, std::pair{"outputs", &m.outputs}}) {
    j.key(key).begin_array();
    for (const std::string& name : *names) j.value(name);
    j.end_array();
  }
  j.key("max_batch").value(m.max_batch).key("max_queue_delay_us").value(m.max_queue_delay_us);
  j.key("requests").value(m.requests).key("inferences").value(m.inferences).key("executions").value(m.executions);
  j.key("queue_us").value(m.queue_us).key("compute_us").value(m.compute_us);
  j.end_object();
}

}  // namespace

std::string models_text(const std::vector<ModelStatus>& models) {
  if (models.empty()) return "no models loaded\n";
  Table table;
  table.add_row({"MODEL", "KIND", "VERSION", "STATE", "PRECISION", "RESOLUTIONS", "WEIGHTS", "BATCH", "RUNS"});
  std::string notes;  // errors and signatures, under the table
  for (const ModelStatus& m : models) {
    table.add_row({m.name, m.kind.empty() ? m.name : m.kind, m.version ? std::to_string(m.version) : "-",
                   model_state_name(m.state), precision_name(m.precision), resolutions_text(m.resolutions),
                   m.weight_bytes ? format_bytes(m.weight_bytes) : "-",
                   m.max_batch > 1 ? std::to_string(m.max_batch) : "-",
                   // inferences in engine calls (their ratio is the mean batch)
                   m.executions ? std::to_string(m.inferences) + " in " + std::to_string(m.executions) : "-"});
    if (!m.error.empty()) notes += "  " + m.name + ": " + m.error + "\n";
    if (!m.inputs.empty())
      notes += "  " + m.name + ": inputs " + join(m.inputs, ", ") + "; outputs " + join(m.outputs, ", ") + "\n";
  }
  return table.render() + notes;
}

std::string models_json(const std::vector<ModelStatus>& models) {
  JsonWriter j;
  j.begin_array();
  for (const ModelStatus& m : models) write_model_json(j, m);
  j.end_array();
  return j.str() + "\n";
}

std::string status_text(const DaemonStatus& s) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof(line), "%s  ·  %s  ·  up %s  ·  %u session%s  ·  %s registered shared memory\n",
                s.server_version.empty() ? "recond" : s.server_version.c_str(), daemon_state_name(s.state),
                format_uptime(s.uptime).c_str(), s.sessions_open, s.sessions_open == 1 ? "" : "s",
                format_bytes(s.region_bytes).c_str());
  out += line;

  out += "\n";
  if (s.devices.empty()) {
    out += "no devices\n";
  } else {
    Table devices;
    devices.add_row({"GPU", "NAME", "MEMORY USED", "POOL IN USE", "POOL HIGH", "WEIGHTS", "RESULTS", "WORK ITEMS"});
    for (const DeviceStatus& d : s.devices) {
      const uint64_t total = d.device_local_budget_bytes ? d.device_local_budget_bytes : d.device_local_total_bytes;
      devices.add_row({std::to_string(d.index), d.name, used_of(d.device_local_used_bytes, total),
                       used_of(d.pool.bytes_in_use, d.pool.bytes_reserved), format_bytes(d.pool.high_water_bytes),
                       format_bytes(d.weight_bytes), format_bytes(d.result_bytes), std::to_string(d.work_items)});
    }
    out += devices.render();
    for (const DeviceStatus& d : s.devices) {
      if (!d.capabilities.empty()) out += "  gpu " + std::to_string(d.index) + ": " + join(d.capabilities, ", ") + "\n";
      if (!d.error.empty()) out += "  gpu " + std::to_string(d.index) + " OUT OF ROTATION: " + d.error + "\n";
    }
  }

  out += "\n" + models_text(s.models);

  out += "\n";
  std::snprintf(line, sizeof(line), "QUEUE     %u pending  ·  %u in flight  ·  capacity %u  ·  oldest wait %u ms\n",
                s.queue.pending, s.queue.in_flight, s.queue.capacity, s.queue.oldest_wait_ms);
  out += line;
  const ThroughputStats& t = s.throughput;
  const double mean_batch = t.executions ? static_cast<double>(t.inferences) / static_cast<double>(t.executions) : 0.0;
  std::snprintf(line, sizeof(line),
                "REQUESTS  %llu ok  ·  %llu failed  ·  %.2f pairs/s (last %u s)  ·  mean batch %.2f\n",
                static_cast<unsigned long long>(t.requests_ok), static_cast<unsigned long long>(t.requests_failed),
                t.pairs_per_s, t.window_s, mean_batch);
  out += line;

  bool any_latency = false;
  for (const LatencyStats& l : s.latency) any_latency = any_latency || l.count > 0;
  if (any_latency) {
    out += "\n";
    Table latency;
    latency.add_row({"LATENCY", "COUNT", "P50", "P90", "P99", "MAX"});
    for (const LatencyStats& l : s.latency) {
      latency.add_row({l.stage, std::to_string(l.count), format_us(l.p50_us), format_us(l.p90_us), format_us(l.p99_us),
                       format_us(l.max_us)});
    }
    out += latency.render();
  }

  if (!s.sessions.empty()) {
    out += "\n";
    Table sessions;
    sessions.add_row({"CLIENT", "PID", "UID", "REGIONS", "REGION BYTES", "HANDLES", "RESULT BYTES"});
    for (const SessionStatus& c : s.sessions) {
      sessions.add_row({c.client_name.empty() ? "-" : c.client_name, std::to_string(c.pid), std::to_string(c.uid),
                        std::to_string(c.regions), format_bytes(c.region_bytes), std::to_string(c.handles),
                        format_bytes(c.result_bytes)});
    }
    out += sessions.render();
  }
  return out;
}

std::string status_json(const DaemonStatus& s) {
  JsonWriter j;
  j.begin_object();
  j.key("server_version").value(s.server_version).key("state").value(daemon_state_name(s.state));
  j.key("uptime_s").value(static_cast<int64_t>(s.uptime.count()));
  j.key("devices").begin_array();
  for (const DeviceStatus& d : s.devices) {
    j.begin_object();
    j.key("index").value(d.index).key("name").value(d.name).key("vendor_id").value(d.vendor_id);
    j.key("device_id").value(d.device_id).key("driver_version").value(d.driver_version);
    j.key("api_version").value(d.api_version);
    std::string uuid;
    for (uint8_t b : d.uuid) {
      char hex[3];
      std::snprintf(hex, sizeof(hex), "%02x", b);
      uuid += hex;
    }
    j.key("uuid").value(uuid);
    j.key("capabilities").begin_array();
    for (const std::string& c : d.capabilities) j.value(c);
    j.end_array();
    j.key("device_local_total_bytes").value(d.device_local_total_bytes);
    j.key("device_local_budget_bytes").value(d.device_local_budget_bytes);
    j.key("device_local_used_bytes").value(d.device_local_used_bytes);
    j.key("pool").begin_object();
    j.key("bytes_reserved").value(d.pool.bytes_reserved).key("bytes_in_use").value(d.pool.bytes_in_use);
    j.key("high_water_bytes").value(d.pool.high_water_bytes).key("hits").value(d.pool.hits);
    j.key("misses").value(d.pool.misses).key("blocks").value(d.pool.blocks);
    j.end_object();
    j.key("weight_bytes").value(d.weight_bytes).key("result_bytes").value(d.result_bytes);
    j.key("work_items").value(d.work_items).key("error").value(d.error);
    j.end_object();
  }
  j.end_array();
  j.key("models").begin_array();
  for (const ModelStatus& m : s.models) write_model_json(j, m);
  j.end_array();
  j.key("queue").begin_object();
  j.key("pending").value(s.queue.pending).key("in_flight").value(s.queue.in_flight);
  j.key("capacity").value(s.queue.capacity).key("oldest_wait_ms").value(s.queue.oldest_wait_ms);
  j.end_object();
  const ThroughputStats& t = s.throughput;
  j.key("throughput").begin_object();
  j.key("requests_ok").value(t.requests_ok).key("requests_failed").value(t.requests_failed);
  j.key("inferences").value(t.inferences).key("executions").value(t.executions);
  j.key("pairs_per_s").value(t.pairs_per_s).key("window_s").value(t.window_s);
  j.end_object();
  j.key("latency").begin_array();
  for (const LatencyStats& l : s.latency) {
    j.begin_object();
    j.key("stage").value(l.stage).key("count").value(l.count).key("p50_us").value(l.p50_us);
    j.key("p90_us").value(l.p90_us).key("p99_us").value(l.p99_us).key("max_us").value(l.max_us);
    j.end_object();
  }
  j.end_array();
  j.key("sessions_open").value(s.sessions_open).key("region_bytes").value(s.region_bytes);
  j.key("sessions").begin_array();
  for (const SessionStatus& c : s.sessions) {
    j.begin_object();
    j.key("client_name").value(c.client_name).key("pid").value(c.pid).key("uid").value(c.uid);
    j.key("regions").value(c.regions).key("region_bytes").value(c.region_bytes);
    j.key("handles").value(c.handles).key("result_bytes").value(c.result_bytes);
    j.end_object();
  }
  j.end_array();
  j.end_object();
  return j.str() + "\n";
}

}  // namespace reconctl
