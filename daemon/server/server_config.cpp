// ServerOptions from DaemonConfig and the server-only flags: see server_config.h.
#include "daemon/server/server_config.h"

#include <filesystem>

#include "daemon/service/config_values.h"
#include "daemon/service/socket_activation.h"

namespace recon::daemon {
namespace {

struct Flag {
  const char* name;
  Status (*apply)(ServerFlags&, std::string_view);
};

Status absolute_path(std::string_view value, std::string& out) {
  const std::string path(trim(value));
  if (path.empty()) return invalid_argument("expected a path");
  std::error_code error;
  out = std::filesystem::absolute(path, error).lexically_normal().string();
  if (error) return invalid_argument("cannot make '" + path + "' absolute: " + error.message());
  return Status::ok();
}

constexpr Flag kFlags[] = {
    {"max-batch",
     [](ServerFlags& f, std::string_view v) {
       RECON_ASSIGN_OR_RETURN(const uint64_t n, parse_uint(trim(v), 1, 64));
       f.max_batch = static_cast<uint32_t>(n);
       return Status::ok();
     }},
    {"batch-wait-us",
     [](ServerFlags& f, std::string_view v) {
       RECON_ASSIGN_OR_RETURN(const uint64_t n, parse_uint(trim(v), 0, 1'000'000));
       f.batch_wait = std::chrono::microseconds(n);
       return Status::ok();
     }},
    {"max-result-bytes",
     [](ServerFlags& f, std::string_view v) {
       RECON_ASSIGN_OR_RETURN(f.max_result_bytes, parse_byte_size(v, 4096, uint64_t{1} << 42));
       return Status::ok();
     }},
    {"max-total-result-bytes",
     [](ServerFlags& f, std::string_view v) {
       RECON_ASSIGN_OR_RETURN(f.max_total_result_bytes, parse_byte_size(v, 4096, uint64_t{1} << 44));
       return Status::ok();
     }},
    {"max-message-bytes",
     [](ServerFlags& f, std::string_view v) {
       RECON_ASSIGN_OR_RETURN(f.max_message_bytes, parse_byte_size(v, 64 << 10, uint64_t{1} << 30));
       return Status::ok();
     }},
    {"drain-timeout",
     [](ServerFlags& f, std::string_view v) {
       RECON_ASSIGN_OR_RETURN(f.drain_timeout,
                              parse_duration(v, std::chrono::milliseconds(100), std::chrono::minutes(10)));
       return Status::ok();
     }},
    {"model-dir",
     [](ServerFlags& f, std::string_view v) {
       std::string path;
       RECON_RETURN_IF_ERROR(absolute_path(v, path));
       f.model_dir = path;
       return Status::ok();
     }},
    {"retrieval",
     [](ServerFlags& f, std::string_view v) {
       std::string path;
       RECON_RETURN_IF_ERROR(absolute_path(v, path));
       f.retrieval = path;
       return Status::ok();
     }},
    {"retrieval-backbone",
     [](ServerFlags& f, std::string_view v) {
       if (trim(v).empty()) return invalid_argument("expected a model name");
       f.retrieval_backbone = std::string(trim(v));
       return Status::ok();
     }},
    {"socket-dir",
     [](ServerFlags& f, std::string_view v) {
       std::string path;
       RECON_RETURN_IF_ERROR(absolute_path(v, path));
       RECON_RETURN_IF_ERROR(check_socket_path(path + "/regions.sock"));
       f.socket_dir = path;
       return Status::ok();
     }},
};

}  // namespace

Result<SplitArguments> extract_server_flags(int argc, const char* const* argv) {
  SplitArguments out;
  if (argc > 0) out.rest.emplace_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const Flag* flag = nullptr;
    std::optional<std::string> value;
    for (const Flag& f : kFlags) {
      const std::string name = std::string("--") + f.name;
      if (arg == name) {
        flag = &f;
        if (i + 1 >= argc) return invalid_argument(name + " needs a value");
        value = argv[++i];
      } else if (arg.rfind(name + "=", 0) == 0) {
        flag = &f;
        value = arg.substr(name.size() + 1);
      }
      if (flag) break;
    }
    if (flag == nullptr) {
      out.rest.push_back(arg);
      continue;
    }
    RECON_RETURN_IF_ERROR(flag->apply(out.flags, *value).with_context(std::string("--") + flag->name));
  }
  return out;
}

std::string server_flags_usage() {
  return "\nServer options (no recond.conf keys yet):\n"
         "  --max-batch N                 pairs per engine call, 1..64 (default 1: no batching)\n"
         "  --batch-wait-us N             wait up to N us to fill a batch (default 0)\n"
         "  --max-result-bytes SIZE       device bytes of one session's result handles (default 4GiB)\n"
         "  --max-total-result-bytes SIZE device bytes of all result handles (default 16GiB)\n"
         "  --max-message-bytes SIZE      largest ZeroMQ frame / request (default 64MiB)\n"
         "  --drain-timeout DURATION      on SIGTERM, wait this long for running work (default 20s)\n"
         "  --model-dir PATH              the model repository LoadModel loads from (default: none)\n"
         "  --retrieval PATH              load a retrieval head (safetensors) as model 'retrieval'\n"
         "  --retrieval-backbone NAME     the mast3r model whose encoder feeds it (default: the first)\n"
         "  --socket-dir DIR              put client.sock, regions.sock and manager.sock in DIR\n";
}

void apply_socket_paths(const ServerFlags& flags, const char* runtime_directory, DaemonConfig& config) {
  if (flags.socket_dir) {
    config.client_socket = *flags.socket_dir + "/client.sock";
    config.regions_socket = *flags.socket_dir + "/regions.sock";
    config.manager_socket = *flags.socket_dir + "/manager.sock";
    return;
  }
  if (runtime_directory == nullptr || *runtime_directory == '\0') return;
  std::string dir(runtime_directory);
  if (const size_t colon = dir.find(':'); colon != std::string::npos) dir.resize(colon);
  const DaemonConfig defaults;
  std::pair<std::string*, std::pair<const std::string*, const char*>> sockets[] = {
      {&config.client_socket, {&defaults.client_socket, "/client.sock"}},
      {&config.regions_socket, {&defaults.regions_socket, "/regions.sock"}},
      {&config.manager_socket, {&defaults.manager_socket, "/manager.sock"}}};
  for (auto& [path, fallback] : sockets) {
    if (*path == *fallback.first && check_socket_path(dir + fallback.second).is_ok()) *path = dir + fallback.second;
  }
}

ServerOptions server_options(const DaemonConfig& config, const ServerFlags& flags) {
  ServerOptions o;
  o.limits.max_queue = config.max_queue;
  o.limits.max_clients = config.max_clients;
  o.limits.max_remote_sessions = config.max_remote_sessions;
  o.limits.max_remote_sessions_per_peer = config.max_remote_sessions_per_peer;
  o.limits.max_handles_per_client = config.max_handles_per_client;
  o.limits.handle_ttl = config.handle_ttl;
  if (flags.max_result_bytes) o.limits.max_result_bytes_per_client = *flags.max_result_bytes;
  if (flags.max_total_result_bytes) o.limits.max_total_result_bytes = *flags.max_total_result_bytes;
  if (flags.max_message_bytes) o.limits.max_message_bytes = *flags.max_message_bytes;
  o.registry.max_regions_per_client = config.max_regions_per_client;
  o.registry.max_region_bytes = config.max_region_bytes;
  o.registry.max_bytes_per_client = config.max_client_bytes;
  o.registry.max_total_bytes = config.max_total_region_bytes;
  if (flags.max_batch) o.batching.max_batch = *flags.max_batch;
  if (flags.batch_wait) o.batching.max_wait = *flags.batch_wait;
  if (flags.drain_timeout) o.drain_timeout = *flags.drain_timeout;
  if (flags.model_dir) o.model_dir = *flags.model_dir;
  for (const ModelSource& m : config.models) {
    ModelSpec spec;
    spec.name = m.name;
    spec.path = m.path;
    if (std::filesystem::path(m.path).extension() == ".onnx") spec.kind = "onnx";  // as the model directory decides
    o.models.push_back(std::move(spec));
  }
  if (flags.retrieval) {
    ModelSpec head;
    head.name = "retrieval";
    head.kind = "retrieval";
    head.path = *flags.retrieval;
    head.backbone = flags.retrieval_backbone ? *flags.retrieval_backbone
                    : o.models.empty()       ? std::string("mast3r")
                                             : o.models.front().name;
    o.models.push_back(std::move(head));
  }
  o.precision = config.precision;
  for (const Resolution& r : config.warmup) o.warmup.push_back({r.height, r.width});
  if (config.tcp) o.tcp_endpoint = config.tcp->zmq_endpoint();
  if (config.metrics_port != 0) o.metrics_port = config.metrics_port;
  if (auto gid = resolve_group(config.manager_group); gid.is_ok()) o.manager_gid = *gid;
  return o;
}

}  // namespace recon::daemon
