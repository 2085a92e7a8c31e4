// What the daemon benches share: an in-process recond on the tiny golden model with one connected
// client and a registered 16 MiB region, and a main() that tears those down before returning.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "tests/daemon/server/server_harness.h"
#include "tests/daemon/server/test_client.h"

namespace recon::daemon::testing {

struct BenchDaemon {
  std::unique_ptr<ServerHarness> harness;
  std::unique_ptr<TestClient> client;
  std::unique_ptr<TestRegion> memory;
  Id128 region;
  bool zero_copy = false;  // the daemon imported the region for the GPU
  std::string error;       // why start-up failed (then the members above may be missing)
};

BenchDaemon start_bench_daemon(const ServerOptions& options, const std::string& client_name);

// Runs the registered benchmarks, then `teardown` (which must drop every BenchDaemon) before
// returning: Vulkan objects destroyed from static destructors, after the driver's own have run,
// crashed the process on exit on NVIDIA.
int run_benchmarks(int argc, char** argv, const std::function<void()>& teardown);

}  // namespace recon::daemon::testing
