// What the daemon reports about itself (GetStatus → StatusReport) and what the management calls
// answer, as plain structs: reconctl prints them, programs can read them. Fields mirror
// schema/response.fbs one to one; zero means "not reported".
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "recon/client/export.h"
#include "recon/client/types.h"

namespace recon::client {

// Same numbers as recon.wire.DaemonState / ModelState.
enum class DaemonState : uint8_t { kStarting = 0, kWarming = 1, kReady = 2, kDegraded = 3, kStopping = 4 };
enum class ModelState : uint8_t { kLoading = 0, kWarming = 1, kReady = 2, kFailed = 3, kUnloading = 4 };
RECON_CLIENT_API const char* daemon_state_name(DaemonState state);  // "STARTING", "WARMING", "READY", ...
RECON_CLIENT_API const char* model_state_name(ModelState state);

struct PoolStats {
  uint64_t bytes_reserved = 0, bytes_in_use = 0, high_water_bytes = 0;
  uint64_t hits = 0, misses = 0;
  uint32_t blocks = 0;
};

struct DeviceStatus {
  uint32_t index = 0;
  std::string name;
  uint32_t vendor_id = 0, device_id = 0;
  std::string driver_version, api_version;
  std::vector<uint8_t> uuid;
  std::vector<std::string> capabilities;
  uint64_t device_local_total_bytes = 0, device_local_budget_bytes = 0, device_local_used_bytes = 0;
  PoolStats pool;
  uint64_t weight_bytes = 0;
  uint64_t result_bytes = 0;
  uint64_t work_items = 0;  // pairs, batch requests, matches, job steps run since start
  std::string error;        // why the GPU is out of rotation (lost); empty while it serves
};

struct ModelStatus {
  std::string name;
  std::string kind;
  ModelState state = ModelState::kLoading;
  Precision precision = Precision::kDefault;
  std::vector<Resolution> resolutions;
  uint64_t weight_bytes = 0;
  std::string error;  // why state is kFailed
  // How the daemon prepares images for it: long side, patch size, squares kept (DUNE-MASt3R) or cut
  // to 4:3; 0 / false from a daemon that does not say.
  uint32_t image_size = 0, patch_size = 0;
  bool square_ok = false;
  uint32_t version = 0;  // the model repository's version directory; 0 = none
  // The named inputs and outputs of its requests (onnx: the graph's); empty: the kind's fixed ones.
  std::vector<std::string> inputs, outputs;
  // Dynamic batching: rows per engine call (1 = each request alone) and the first one's wait.
  uint32_t max_batch = 1;
  uint32_t max_queue_delay_us = 0;
  // Since the daemon started (GetStatus only): requests answered with a result, inferences (rows),
  // engine calls (inferences / executions = mean batch), cumulative queue and compute time.
  uint64_t requests = 0, inferences = 0, executions = 0, queue_us = 0, compute_us = 0;
};

struct QueueStats {
  uint32_t pending = 0, in_flight = 0, capacity = 0, oldest_wait_ms = 0;
};

struct ThroughputStats {
  uint64_t requests_ok = 0, requests_failed = 0, inferences = 0, executions = 0;
  double pairs_per_s = 0;
  uint32_t window_s = 0;
};

struct LatencyStats {
  std::string stage;  // "queue", "input", "compute", "output", "total"
  uint64_t count = 0, p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;
};

struct SessionStatus {
  std::string client_name;
  uint32_t pid = 0, uid = 0, regions = 0, handles = 0;
  uint64_t region_bytes = 0, result_bytes = 0;
};

struct DaemonStatus {
  std::string server_version;
  DaemonState state = DaemonState::kStarting;
  std::chrono::seconds uptime{0};
  std::vector<DeviceStatus> devices;
  std::vector<ModelStatus> models;
  QueueStats queue;
  ThroughputStats throughput;
  std::vector<LatencyStats> latency;
  uint32_t sessions_open = 0;
  uint64_t region_bytes = 0;
  std::vector<SessionStatus> sessions;  // only when asked for (management socket)
};

struct WarmupReport {
  std::vector<ModelStatus> models;
  std::chrono::milliseconds duration{0};
};

struct LoadModelRequest {
  std::string name;  // what requests will call it ("mast3r")
  // Relative to the daemon's model directory (recond --model-dir): a model directory of the
  // repository (docs/DAEMON.md) or a weights file; empty = `name`.
  std::string weights;
  std::string kind;      // "mast3r", "retrieval", "onnx"; empty = model.conf's, else onnx for a .onnx file, else mast3r
  uint32_t version = 0;  // of a model directory; 0 = the highest
  std::string backbone;  // kind "retrieval": the loaded mast3r model feeding it; empty = model.conf's
  Precision precision = Precision::kDefault;
  std::vector<Resolution> resolutions;
  bool warm = true;  // warm up before answering
};

struct LoadModelReport {
  ModelStatus model;
  std::chrono::milliseconds duration{0};
};

// The session this client holds (SessionOpened).
struct SessionInfo {
  std::string server_version;
  uint32_t min_protocol_version = 0, max_protocol_version = 0;
  // Per-session limits the daemon enforces (0 = unlimited).
  uint32_t max_regions = 0, max_handles = 0;
  uint64_t max_region_bytes = 0, max_result_bytes = 0, max_message_bytes = 0;
};

}  // namespace recon::client
