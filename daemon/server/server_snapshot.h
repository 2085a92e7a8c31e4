// ServerSnapshot: one consistent-enough copy of everything `reconctl status` and the Prometheus
// endpoint show — state, devices and pools, models, queue, counters and latency percentiles,
// sessions and regions. Gathered by the I/O thread (Server::snapshot), rendered by
// status_report.h (FlatBuffers StatusReport) and prometheus_text.h (text exposition).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/ipc/shm_registry.h"
#include "daemon/serving/device.h"
#include "daemon/serving/metrics.h"
#include "daemon/serving/result_store.h"
#include "daemon/serving/scheduler.h"
#include "gpu/buffer_pool.h"
#include "schema/response_generated.h"

namespace recon::daemon {

struct DeviceSnapshot {
  uint32_t index = 0;
  std::string name;
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  std::string driver_version;
  std::string api_version;
  std::vector<std::string> capabilities;
  uint64_t device_local_total_bytes = 0;
  uint64_t device_local_budget_bytes = 0;
  uint64_t device_local_used_bytes = 0;
  gpu::PoolStats activations;  // results and intermediates
  gpu::PoolStats weights;
  gpu::PoolStats staging;
  uint64_t weight_bytes = 0;
  uint64_t result_bytes = 0;
  uint64_t work_items = 0;
  std::string error;  // why the device is out of rotation (Device::mark_lost); empty while it serves
  std::vector<ModelInfo> models;
};

struct SessionSnapshot {
  std::string client_name;
  uint32_t pid = 0;
  uint32_t uid = 0;
  bool remote = false;
  ClientUsage regions;
  ResultUsage results;
};

struct ServerSnapshot {
  std::string server_version;
  wire::DaemonState state = wire::DaemonState::STARTING;
  uint64_t uptime_s = 0;
  std::vector<DeviceSnapshot> devices;
  SchedulerStats queue;
  MetricsSnapshot metrics;
  RegistryStats regions;
  ResultUsage results;
  uint64_t handles_expired = 0;
  uint32_t sessions_open = 0;
  std::vector<SessionSnapshot> sessions;  // only when asked for
};

// Device facts (capabilities, heaps, pools, models). Safe from any thread.
DeviceSnapshot snapshot_device(Device& device, uint64_t result_bytes);

const char* daemon_state_name(wire::DaemonState state);

}  // namespace recon::daemon
