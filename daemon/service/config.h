// DaemonConfig: everything recond is told at start, from /etc/recon/recond.conf and the command
// line (flags override the file). The file is INI-like: [sections], `key = value`, full-line
// comments with '#' or ';', and ' #' comments after a value. Parsing is strict: an unknown
// section or key, a key given twice or a bad value is an error naming file:line (or the flag),
// so a typo never silently leaves a default in place. This file only reads and checks; it opens
// no device, socket or model (the daemon does, and reports what fails there).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/service/config_values.h"
#include "gpu/log.h"
#include "gpu/precision.h"
#include "gpu/status.h"

namespace recon::daemon {

inline constexpr const char* kDefaultConfigPath = "/etc/recon/recond.conf";
// Exit status for a configuration error (sysexits EX_CONFIG); recond.service does not restart on it.
inline constexpr int kExitConfigError = 78;

enum class PipelineCacheMode {
  kAuto,  // $CACHE_DIRECTORY/pipeline-cache.bin under systemd, else the gpu library's default
  kOff,   // in memory only: every start compiles every pipeline
  kPath,  // pipeline_cache_path
};

struct ModelSource {
  std::string name;  // what requests and reconctl call it ("mast3r", "retrieval", ...)
  std::string path;  // absolute path of its weights (safetensors) or graph (onnx)
  bool operator==(const ModelSource&) const = default;
};

struct DaemonConfig {
  // [gpu]
  std::string device;  // "" = best device; "all", a list "0,1", an index or a name substring (gpu::Context)
  gpu::Precision precision = gpu::Precision::kF32;
  PipelineCacheMode pipeline_cache = PipelineCacheMode::kAuto;
  std::string pipeline_cache_path;  // only for kPath
  // [models]: loaded at start, in this order.
  std::vector<ModelSource> models;
  // [warmup]: every model is run once per resolution before READY=1.
  std::vector<Resolution> warmup;
  // [limits]: every client-controllable resource has one.
  uint32_t max_queue = 256;                   // queued requests over all clients
  uint32_t max_clients = 64;                  // concurrent local client sessions (side channel)
  uint32_t max_remote_sessions = 16;          // sessions opened over ZeroMQ, all peers
  uint32_t max_remote_sessions_per_peer = 4;  // ... of one peer (a uid; an IP address over tcp)
  uint32_t max_regions_per_client = 64;       // registered shared-memory regions
  uint64_t max_region_bytes = uint64_t{4} << 30;
  uint64_t max_client_bytes = uint64_t{8} << 30;                   // all regions of one client
  uint64_t max_total_region_bytes = uint64_t{32} << 30;            // all clients (pinned host memory)
  uint32_t max_handles_per_client = 256;                           // result handles alive at once
  std::chrono::milliseconds handle_ttl = std::chrono::minutes(5);  // unreleased handles expire
  // [sockets]: used when systemd did not pass them (socket activation wins).
  std::string client_socket = "/run/recon/client.sock";
  std::string regions_socket = "/run/recon/regions.sock";
  std::string manager_socket = "/run/recon/manager.sock";
  std::string client_group = "recon-clients";  // group of client and regions sockets
  std::string manager_group = "recon-admin";   // group of the manager socket; manager peers must be in it
  // [network]: both off by default.
  std::optional<TcpEndpoint> tcp;
  uint16_t metrics_port = 0;  // 0 = off
  // [log]
  LogLevel log_level = LogLevel::kInfo;

  bool operator==(const DaemonConfig&) const = default;
};

struct CommandLine {
  DaemonConfig config;
  std::string config_path;    // the file that was read; "" when none was
  bool foreground = false;    // --foreground: log to stderr even under systemd
  bool check_config = false;  // --check-config: validate, print the effective config, exit
  bool help = false;          // --help: nothing else was read or checked
};

// Parses config file text (`name` labels errors: "name:line: ..."), on top of `base`; the result
// is validated.
Result<DaemonConfig> parse_config(std::string_view text, const std::string& name, DaemonConfig base = {});
// Reads and parses a file (at most 1 MiB).
Result<DaemonConfig> load_config_file(const std::string& path, DaemonConfig base = {});

// argv → CommandLine. Reads --config PATH (default kDefaultConfigPath, which may be absent; an
// explicit one must exist), then applies the flags in order: a flag overrides the file's key;
// --model NAME=PATH replaces that model or adds it; the first --warmup replaces the file's list.
// Accepts --flag VALUE and --flag=VALUE. Relative paths in flags are made absolute.
Result<CommandLine> parse_command_line(int argc, const char* const* argv);

// The --help text.
std::string usage(std::string_view program);

// Cross-field checks (distinct socket paths, ordered byte limits, distinct ports).
Status validate_config(const DaemonConfig& config);

// The config as a file that parses back to the same DaemonConfig (for --check-config).
std::string format_config(const DaemonConfig& config);

// The pipeline cache file to use: "" keeps it in memory. For kAuto: the first entry of
// `cache_directory` ($CACHE_DIRECTORY, colon-separated) + "/pipeline-cache.bin" when set, else
// `fallback` (gpu::PipelineCache::default_path).
std::string pipeline_cache_file(const DaemonConfig& config, const char* cache_directory, const std::string& fallback);

}  // namespace recon::daemon
