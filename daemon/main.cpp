// recond: the recon GPU inference daemon. main() is the process edge: it reads the configuration
// (recond.conf + flags), sets up logging, signals and sd_notify, takes its three sockets (socket
// activation, or binds them itself), opens the GPU runtime with its pipeline cache and hands all
// of it to the Server (daemon/server/server.h), whose I/O loop runs on this thread until SIGTERM.
// Exit status: 0 after a clean stop, 78 for configuration errors (no restart), 1 otherwise.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "daemon/server/server.h"
#include "daemon/server/server_config.h"
#include "daemon/service/config.h"
#include "daemon/service/journal_log.h"
#include "daemon/service/notify.h"
#include "daemon/service/signals.h"
#include "daemon/service/socket_activation.h"
#include "gpu/log.h"
#include "gpu/runtime.h"

namespace recon::daemon {
namespace {

constexpr int kExitFailure = 1;

// The group a self-bound socket gets. A missing default group (development machines have no
// recon-clients) leaves the daemon's own group; a missing configured one is an error.
Result<std::optional<gid_t>> socket_group(const std::string& name, const std::string& default_name) {
  auto gid = resolve_group(name);
  if (gid.is_ok()) return std::optional<gid_t>(*gid);
  if (name == default_name) {
    log_warning("Group '" + name + "' does not exist; sockets keep the daemon's group");
    return std::optional<gid_t>();
  }
  return gid.status();
}

Result<Listener> take_socket(ListenFds& fds, std::string_view name, const std::string& path, UnixSocketType type,
                             std::optional<gid_t> group) {
  if (!fds.activated()) {
    // Foreground runs: create the directory the socket goes into (systemd's RuntimeDirectory= does it
    // otherwise).
    std::error_code ignored;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
  }
  auto listener = acquire_listener(fds, name, {.path = path, .type = type, .mode = 0660, .group = group});
  if (!listener.is_ok()) return listener.status().with_context(std::string("the ") + std::string(name) + " socket");
  if (listener->activated && group) {
    if (Status s = check_socket_file(listener->path, *group, 0660); !s.is_ok()) log_warning(s.message());
  }
  return listener;
}

std::string cache_path(const DaemonConfig& config) {
  if (config.pipeline_cache == PipelineCacheMode::kOff) return "none";  // gpu::RuntimeOptions' "no file"
  // "" = gpu::PipelineCache::default_path() of the device, chosen by the runtime.
  return pipeline_cache_file(config, std::getenv("CACHE_DIRECTORY"), "");
}

// One runtime per device that `device` selects (gpu::Context::select_devices), in that order:
// device i of the server is the i-th.
Result<std::vector<std::unique_ptr<gpu::Runtime>>> open_devices(const DaemonConfig& config) {
  RECON_ASSIGN_OR_RETURN(const std::vector<gpu::DeviceInfo> present, gpu::Context::list_devices());
  RECON_ASSIGN_OR_RETURN(const std::vector<uint32_t> chosen,
                         gpu::Context::select_devices(present, gpu::Context::device_selector(config.device)));
  std::vector<std::unique_ptr<gpu::Runtime>> runtimes;
  for (const uint32_t index : chosen) {
    gpu::RuntimeOptions runtime_options;
    runtime_options.context.device = std::to_string(index);
    runtime_options.context.application_name = "recond";
    runtime_options.pipeline_cache_path = cache_path(config);
    auto runtime = gpu::Runtime::create(runtime_options);
    if (!runtime.is_ok()) return runtime.status().with_context("device " + std::to_string(index));
    gpu::PipelineCache& cache = runtime.value()->pipeline_cache();
    log_info("Device " + std::to_string(runtimes.size()) + ": " + runtime.value()->caps().device_name +
             " (Vulkan device " + std::to_string(index) + "); pipeline cache " +
             (cache.path().empty() ? std::string("in memory") : cache.path()) + " (" +
             gpu::cache_state_name(cache.state()) + ", " + std::to_string(cache.loaded_bytes()) + " bytes)");
    runtimes.push_back(std::move(runtime).value());
  }
  return runtimes;
}

int run(int argc, char** argv) {
  auto split = extract_server_flags(argc, argv);
  if (!split.is_ok()) {
    std::fprintf(stderr, "recond: %s\n", split.status().message().c_str());
    return kExitConfigError;
  }
  std::vector<const char*> rest;
  for (const std::string& arg : split->rest) rest.push_back(arg.c_str());
  auto line = parse_command_line(static_cast<int>(rest.size()), rest.data());
  if (!line.is_ok()) {
    std::fprintf(stderr, "recond: %s\n", line.status().message().c_str());
    return kExitConfigError;
  }
  if (line->help) {
    std::fputs((usage(argv[0]) + server_flags_usage()).c_str(), stdout);
    return 0;
  }
  DaemonConfig config = line->config;
  apply_socket_paths(split->flags, std::getenv("RUNTIME_DIRECTORY"), config);
  if (line->check_config) {
    std::fputs(format_config(config).c_str(), stdout);
    return 0;
  }
  install_log_sink(line->foreground, config.log_level);

  // Before any thread starts: threads inherit the blocked signal mask.
  auto signals = SignalFd::open();
  if (!signals.is_ok()) {
    log_error("Cannot watch signals: " + signals.status().to_string());
    return kExitFailure;
  }
  (void)ignore_sigpipe();
  auto notifier = Notifier::from_environment();
  if (!notifier.is_ok()) {
    log_error("Bad systemd environment: " + notifier.status().to_string());
    return kExitConfigError;
  }
  (void)notifier->status("starting: opening sockets and the GPU");

  auto fds = ListenFds::from_environment();
  if (!fds.is_ok()) {
    log_error("Bad socket activation: " + fds.status().to_string());
    return kExitConfigError;
  }
  const DaemonConfig defaults;
  auto client_group = socket_group(config.client_group, defaults.client_group);
  auto manager_group = socket_group(config.manager_group, defaults.manager_group);
  if (!client_group.is_ok() || !manager_group.is_ok()) {
    log_error((client_group.is_ok() ? manager_group.status() : client_group.status()).to_string());
    return kExitConfigError;
  }
  ServerSockets sockets;
  auto client = take_socket(*fds, kClientSocketName, config.client_socket, UnixSocketType::kStream, *client_group);
  auto regions =
      take_socket(*fds, kRegionsSocketName, config.regions_socket, UnixSocketType::kSeqPacket, *client_group);
  auto manager = take_socket(*fds, kManagerSocketName, config.manager_socket, UnixSocketType::kStream, *manager_group);
  for (const Result<Listener>* l : {&client, &regions, &manager}) {
    if (!l->is_ok()) {
      log_error("Cannot listen: " + l->status().to_string());
      return kExitFailure;
    }
  }
  sockets.client = std::move(client).value();
  sockets.regions = std::move(regions).value();
  sockets.manager = std::move(manager).value();
  for (const std::string& name : fds->unclaimed_names()) log_warning("Ignoring socket-activated fd '" + name + "'");

  auto runtimes = open_devices(config);
  if (!runtimes.is_ok()) {
    log_error("Cannot open the GPU: " + runtimes.status().to_string());
    return kExitFailure;
  }
  std::vector<gpu::Runtime*> devices;
  for (const auto& runtime : *runtimes) devices.push_back(runtime.get());

  ServerOptions options = server_options(config, split->flags);
  auto server = Server::create(std::move(options), std::move(sockets), std::move(devices), &*notifier);
  if (!server.is_ok()) {
    log_error("Cannot start the server: " + server.status().to_string());
    return kExitFailure;
  }
  const int code = server.value()->run(&*signals);
  if (server.value()->workers_stuck()) {
    // A worker thread is still inside a GPU call: no destructor may wait for it.
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return code;
}

}  // namespace
}  // namespace recon::daemon

int main(int argc, char** argv) {
  try {
    return recon::daemon::run(argc, argv);
  } catch (const std::exception& e) {  // the process edge: nothing below throws on purpose
    std::fprintf(stderr, "recond: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "recond: unknown exception\n");
  }
  return 1;
}
