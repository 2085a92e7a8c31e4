// reconctl status / models / wait-ready: what the daemon reports about itself.
#include <chrono>
#include <cstdio>
#include <thread>

#include "args.h"
#include "commands.h"
#include "exit_codes.h"
#include "recon/client.h"
#include "status_view.h"

namespace reconctl {

using recon::client::Client;
using recon::client::DaemonState;

int cmd_status(const Context& context) {
  const Args args(context.args, {}, {"json", "sessions"});
  if (!args.positionals().empty()) throw UsageError("status takes no arguments");
  Client client = Client::connect_control(context.connect);
  const auto status = client.status(args.has("sessions"));
  std::fputs((args.has("json") ? status_json(status) : status_text(status)).c_str(), stdout);
  return kExitOk;
}

int cmd_models(const Context& context) {
  const Args args(context.args, {}, {"json"});
  if (!args.positionals().empty()) throw UsageError("models takes no arguments");
  Client client = Client::connect_control(context.connect);
  const auto status = client.status();
  std::fputs((args.has("json") ? models_json(status.models) : models_text(status.models)).c_str(), stdout);
  return kExitOk;
}

int cmd_wait_ready(const Context& context) {
  const Args args(context.args, {}, {"quiet"});
  if (args.positionals().size() > 1) throw UsageError("wait-ready takes at most one argument (SECONDS)");
  const int64_t seconds = args.positionals().empty() ? 300 : parse_int("SECONDS", args.positionals()[0], 0, 86400);
  const bool quiet = args.has("quiet");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  auto options = context.connect;
  options.timeout = std::chrono::milliseconds(2000);
  std::string last;
  for (;;) {
    std::string now;
    try {
      Client client = Client::connect_control(options);
      const auto status = client.status();
      if (status.state == DaemonState::kReady) {
        if (!quiet) std::printf("recond is ready (%s)\n", status.server_version.c_str());
        return kExitOk;
      }
      if (status.state == DaemonState::kStopping) {
        std::fprintf(stderr, "reconctl: recond is stopping\n");
        return kExitUnavailable;
      }
      now = std::string("recond is ") + recon::client::daemon_state_name(status.state);
    } catch (const recon::client::Error& e) {
      if (e.code() == recon::client::ErrorCode::kPermissionDenied) throw;
      now = e.message();
    }
    if (now != last && !quiet) std::fprintf(stderr, "reconctl: waiting: %s\n", now.c_str());
    last = now;
    if (std::chrono::steady_clock::now() >= deadline) {
      std::fprintf(stderr, "reconctl: recond not ready after %lld s: %s\n", static_cast<long long>(seconds),
                   last.c_str());
      return kExitUnavailable;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace reconctl
