// ServerOptions: every knob of recond's server part (limits, batching, timeouts) with its default.
// main() fills it from DaemonConfig (recond.conf + flags) and the server-only flags of
// server_config.h; tests fill it directly. Plain data: no I/O, no validation beyond what the
// types say (server_config.cpp checks the ranges of the flags).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/ipc/shm_registry.h"
#include "daemon/serving/model.h"
#include "gpu/precision.h"

namespace recon::daemon {

// Every client-controllable resource has one (DESIGN.md §5, STYLE.md "systemd").
struct ServerLimits {
  // Inference requests waiting for the GPU over all clients (RESOURCE_EXHAUSTED beyond).
  uint32_t max_queue = 256;
  // Fetch requests waiting for the GPU over all clients.
  uint32_t max_fetch_queue = 256;
  // Open local sessions (side-channel connections).
  uint32_t max_clients = 64;
  // Sessions opened over ZeroMQ (OpenSession on the client socket or over tcp): in all, and per
  // peer (a uid on the client socket, an IP address over tcp). Separate from max_clients, so that
  // they never take a local client's slot.
  uint32_t max_remote_sessions = 16;
  uint32_t max_remote_sessions_per_peer = 4;
  // Live result handles per session, counting inferences queued or running for it (an InferBatch
  // counts one per pair).
  uint32_t max_handles_per_client = 256;
  // One InferBatch: images in its list, and pairs after `symmetric` doubling.
  uint32_t max_batch_images = 64;
  uint32_t max_batch_pairs = 256;
  // Long jobs (StartJob): running at once over all clients and of one client, and what one may take.
  uint32_t max_jobs = 2;
  uint32_t max_jobs_per_client = 1;
  uint32_t max_job_images = 1000;
  uint32_t max_job_pairs = 20000;
  // Match: at most this many matches in one answer when Match.max_matches is 0 or larger.
  uint32_t max_matches = 1u << 20;
  // Device bytes held by one session's result handles.
  uint64_t max_result_bytes_per_client = uint64_t{4} << 30;
  // Device bytes held by all result handles.
  uint64_t max_total_result_bytes = uint64_t{16} << 30;
  // Lifetime of a handle nobody released: the default and the cap of InferOptions.ttl_ms.
  std::chrono::milliseconds handle_ttl = std::chrono::minutes(5);
  // One ZeroMQ frame (ZMQ_MAXMSGSIZE: larger frames disconnect the peer) and one verified message.
  uint64_t max_message_bytes = uint64_t{64} << 20;
  // Frames of one ZeroMQ message after the routing id: an optional empty delimiter (REQ) + body.
  uint32_t max_message_parts = 2;
  // Remote (ZeroMQ-opened) sessions end when the connection that opened them closes, or after
  // this long without a request or an answer, never while one of their requests is in flight.
  std::chrono::milliseconds remote_session_idle = std::chrono::minutes(10);
  // Concurrent connections to the metrics endpoint.
  uint32_t max_metrics_connections = 8;
};

struct BatchingOptions {
  // Pairs of the same model and image sizes run as one engine call of up to this many (1 = off).
  // Batch sizes are powers of two (each is a recorded graph, warmed at start) and max_batch.
  uint32_t max_batch = 1;
  // How long the scheduler may hold the first pair of a batch waiting for more (0 = only batch
  // what is already queued, adding no latency).
  std::chrono::microseconds max_wait{0};
};

struct ServerOptions {
  ServerLimits limits;
  RegistryLimits registry;
  BatchingOptions batching;

  // Loaded at start, in this order (a retrieval head after its backbone).
  std::vector<ModelSpec> models;
  // Of the models whose spec names none.
  gpu::Precision precision = gpu::Precision::kF32;
  // Warm-up resolutions as (height, width); each model is run once per resolution and batch size.
  struct Resolution {
    uint32_t height = 0;
    uint32_t width = 0;
    bool operator==(const Resolution&) const = default;
  };
  std::vector<Resolution> warmup;
  // The model repository (model_repository.h) LoadModel loads from ("" = LoadModel refused).
  std::string model_dir;
  // Write the pipeline cache right after warm-up.
  bool save_pipeline_cache = true;
  // EXTEND_TIMEOUT_USEC= sent before each start-up step and while draining.
  std::chrono::seconds startup_step_timeout{300};

  // SIGTERM: how long in-flight work may take before the daemon gives up waiting.
  std::chrono::milliseconds drain_timeout = std::chrono::seconds(20);

  // Manager socket: peers with this uid (the daemon's own), uid 0, or in this group may manage.
  std::optional<gid_t> manager_gid;

  // Optional listeners.
  std::string tcp_endpoint;              // ZeroMQ endpoint "tcp://HOST:PORT"; "" = off
  std::optional<uint16_t> metrics_port;  // Prometheus on 127.0.0.1; nullopt = off, 0 = any free port

  std::string server_version = "recond 0.1.0";
  // Zero-copy: client regions are imported into the GPU at RegisterRegion where the device can
  // (VK_EXT_external_memory_host); false = their images are always copied (region_import.h).
  bool import_regions = true;
  // The official resize runs on the GPU; false = on the worker's CPU (image_input.h).
  bool gpu_preprocess = true;
};

}  // namespace recon::daemon
