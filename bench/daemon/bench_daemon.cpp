#include "bench/daemon/bench_daemon.h"

#include <benchmark/benchmark.h>

namespace recon::daemon::testing {

BenchDaemon start_bench_daemon(const ServerOptions& options, const std::string& client_name) {
  BenchDaemon d;
  d.harness = ServerHarness::start(options);
  if (!d.harness->error().empty()) {
    d.error = d.harness->error();
    return d;
  }
  auto client = TestClient::connect(d.harness->dir(), client_name);
  if (!client.is_ok()) {
    d.error = client.status().to_string();
    return d;
  }
  d.client = std::move(client).value();
  auto memory = TestRegion::create(16 << 20);
  if (!memory.is_ok()) {
    d.error = memory.status().to_string();
    return d;
  }
  d.memory = std::move(memory).value();
  auto registered = d.client->regions().register_region(d.memory->fd(), d.memory->size(), client_name);
  if (!registered.is_ok()) {
    d.error = registered.status().to_string();
    return d;
  }
  d.region = registered->id;
  d.zero_copy = registered->zero_copy;
  return d;
}

int run_benchmarks(int argc, char** argv, const std::function<void()>& teardown) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  teardown();
  benchmark::Shutdown();
  return 0;
}

}  // namespace recon::daemon::testing
