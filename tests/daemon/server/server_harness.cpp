// ServerHarness: see server_harness.h.
#include "tests/daemon/server/server_harness.h"

#include <chrono>

#include "daemon/service/socket_activation.h"

namespace recon::daemon::testing {

ServerOptions tiny_options(const std::string& model) {
  ServerOptions o;
  o.models.push_back({"mast3r", model});
  o.warmup.push_back({kTinyHeight, kTinyWidth});
  o.save_pipeline_cache = false;
  o.limits.max_handles_per_client = 64;
  o.drain_timeout = std::chrono::seconds(20);
  return o;
}

std::unique_ptr<ServerHarness> ServerHarness::start(ServerOptions options, ServerHooks hooks,
                                                    gpu::RuntimeOptions runtime_options, size_t devices) {
  auto h = launch(std::move(options), std::move(hooks), runtime_options, devices);
  if (h->error_.empty()) h->wait_ready();
  return h;
}

std::unique_ptr<ServerHarness> ServerHarness::launch(ServerOptions options, ServerHooks hooks,
                                                     const gpu::RuntimeOptions& runtime_options, size_t devices) {
  auto h = std::unique_ptr<ServerHarness>(new ServerHarness());
  auto fail = [&](const std::string& what, const Status& s) {
    h->error_ = what + ": " + s.to_string();
    return std::move(h);
  };
  std::vector<gpu::Runtime*> runtimes;
  for (size_t i = 0; i < devices; ++i) {
    auto runtime = gpu::Runtime::create(runtime_options);
    if (!runtime.is_ok()) return fail("runtime", runtime.status());
    h->runtimes_.push_back(std::move(runtime).value());
    runtimes.push_back(h->runtimes_.back().get());
  }

  ServerSockets sockets;
  const std::string dir = h->dir();
  auto bind = [&](const std::string& name, UnixSocketType type) -> Result<Listener> {
    UnixSocketOptions o;
    o.path = dir + "/" + name;
    o.type = type;
    o.mode = 0666;
    RECON_ASSIGN_OR_RETURN(UniqueFd fd, bind_unix_socket(o));
    return Listener{std::move(fd), o.path, false};
  };
  auto client = bind("client.sock", UnixSocketType::kStream);
  auto regions = bind("regions.sock", UnixSocketType::kSeqPacket);
  auto manager = bind("manager.sock", UnixSocketType::kStream);
  if (!client.is_ok() || !regions.is_ok() || !manager.is_ok()) return fail("sockets", unavailable("bind failed"));
  sockets.client = std::move(client).value();
  sockets.regions = std::move(regions).value();
  sockets.manager = std::move(manager).value();

  auto server = Server::create(std::move(options), std::move(sockets), std::move(runtimes), nullptr, std::move(hooks));
  if (!server.is_ok()) return fail("server", server.status());
  h->server_ = std::move(server).value();
  h->thread_ = std::thread([raw = h.get()] { raw->exit_code_ = raw->server_->run(); });
  return h;
}

void ServerHarness::wait_ready() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    const wire::DaemonState state = server_->state();
    if (state == wire::DaemonState::READY) return;
    if (state == wire::DaemonState::STOPPING) {
      error_ = "server stopped during start-up";
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  error_ = "server not ready after 120 s";
}

int ServerHarness::stop() {
  if (thread_.joinable()) {
    server_->request_stop();
    thread_.join();
  }
  return exit_code_;
}

ServerHarness::~ServerHarness() {
  stop();
  server_.reset();
  runtimes_.clear();
}

std::vector<uint8_t> test_image(uint32_t height, uint32_t width, uint32_t seed) {
  std::vector<uint8_t> pixels(size_t{height} * width * 3);
  uint32_t x = seed * 2654435761u + 12345u;
  for (uint8_t& p : pixels) {
    x = x * 1664525u + 1013904223u;
    p = static_cast<uint8_t>(x >> 24);
  }
  return pixels;
}

}  // namespace recon::daemon::testing
