// ServerOptions from what recond is told at start: DaemonConfig (recond.conf + its flags, parsed
// by daemon/service/config.h) plus the server-only flags below, which recond.conf has no keys
// for yet. main() takes the server flags out of argv first (extract_server_flags) and hands the
// rest to parse_command_line, so both parsers stay strict about unknown options.
//
// Server-only flags (each --flag VALUE or --flag=VALUE):
//   --max-batch N                 pairs per engine call (1..64, default 1 = no batching)
//   --batch-wait-us N             wait this long to fill a batch (0..1000000, default 0)
//   --max-result-bytes SIZE       device bytes of one session's result handles (default 4GiB)
//   --max-total-result-bytes SIZE device bytes of all result handles (default 16GiB)
//   --max-message-bytes SIZE      one ZeroMQ frame / request (64KiB..1GiB, default 64MiB)
//   --drain-timeout DURATION      SIGTERM: wait this long for in-flight work (default 20s)
//   --model-dir PATH              where LoadModel's relative names point (default: none)
//   --socket-dir DIR              client.sock, regions.sock, manager.sock in DIR (tests, dev)
//   --retrieval PATH              a retrieval head, served as model "retrieval" (EncodeRetrieval)
//   --retrieval-backbone NAME     the mast3r model whose encoder feeds it (default: the first)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "daemon/service/config.h"
#include "daemon/serving/server_options.h"
#include "gpu/status.h"

namespace recon::daemon {

struct ServerFlags {
  std::optional<uint32_t> max_batch;
  std::optional<std::chrono::microseconds> batch_wait;
  std::optional<uint64_t> max_result_bytes;
  std::optional<uint64_t> max_total_result_bytes;
  std::optional<uint64_t> max_message_bytes;
  std::optional<std::chrono::milliseconds> drain_timeout;
  std::optional<std::string> model_dir;
  std::optional<std::string> socket_dir;
  std::optional<std::string> retrieval;
  std::optional<std::string> retrieval_backbone;
};

struct SplitArguments {
  ServerFlags flags;
  std::vector<std::string> rest;  // argv[0] and everything for parse_command_line
};

// Takes the server-only flags out of argv. INVALID_ARGUMENT naming the flag for a bad value.
Result<SplitArguments> extract_server_flags(int argc, const char* const* argv);

// Their --help lines.
std::string server_flags_usage();

// Socket paths: --socket-dir wins; else the configured ones, except that the defaults under
// /run/recon move to $RUNTIME_DIRECTORY when systemd set it (and the config kept the default).
void apply_socket_paths(const ServerFlags& flags, const char* runtime_directory, DaemonConfig& config);

// Everything else: limits, models, warm-up, batching, manager group, optional listeners.
ServerOptions server_options(const DaemonConfig& config, const ServerFlags& flags);

}  // namespace recon::daemon
