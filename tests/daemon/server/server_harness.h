// ServerHarness: an in-process recond for the tests — sockets bound in a private temp
// directory, its own gpu::Runtime (pipeline cache in memory), the tiny golden model, and the
// Server's I/O loop on a thread. start() returns once the server is READY (or failed).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "daemon/server/server.h"
#include "gpu/runtime.h"

namespace recon::daemon::testing {

inline const std::string kGoldenDir = RECON_GOLDEN_DIR;
inline const std::string kTinyModel = kGoldenDir + "/tiny_same/model.safetensors";
// tiny_same's images are 64 wide and 48 high (RGB8).
inline constexpr uint32_t kTinyHeight = 48;
inline constexpr uint32_t kTinyWidth = 64;
// The tiny DUNE-MASt3R model: 14-pixel patches and a 4x4 position table, so images are prepared
// at 56 on the long side, squares kept square (dune_same's pair is 56x56 and 56x42).
inline const std::string kTinyDuneModel = kGoldenDir + "/dune_same/model.safetensors";
inline constexpr uint32_t kTinyDuneSide = 56;

class TempDir {
 public:
  TempDir() {
    std::string pattern = "/tmp/rsrv-XXXXXX";  // short: socket paths must fit in 107 bytes
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A runtime without a pipeline-cache file.
inline gpu::RuntimeOptions in_memory_cache() {
  gpu::RuntimeOptions o;
  o.pipeline_cache_path = "none";
  return o;
}

// Options with a tiny model (by default the ViT-L one) served as "mast3r", warmed at 64x48 (what a
// 64x48 image becomes for a model of another patch size), and small, test-friendly limits.
ServerOptions tiny_options(const std::string& model = kTinyModel);

class ServerHarness {
 public:
  // launch() + wait_ready().
  static std::unique_ptr<ServerHarness> start(ServerOptions options = tiny_options(), ServerHooks hooks = {},
                                              gpu::RuntimeOptions runtime = in_memory_cache(), size_t devices = 1);
  // Returns as soon as the I/O loop runs (the daemon is still warming up). `devices` runtimes of
  // the same physical device (on lavapipe: two logical devices) make a daemon of that many GPUs.
  static std::unique_ptr<ServerHarness> launch(ServerOptions options = tiny_options(), ServerHooks hooks = {},
                                               const gpu::RuntimeOptions& runtime = in_memory_cache(),
                                               size_t devices = 1);
  // Waits for READY; sets error() otherwise.
  void wait_ready();
  ~ServerHarness();

  const std::string& dir() const { return dir_.path(); }
  Server& server() { return *server_; }
  gpu::Runtime& runtime() { return *runtimes_.front(); }
  // Stops the server and returns run()'s exit status.
  int stop();
  std::string error() const { return error_; }

 private:
  TempDir dir_;
  std::vector<std::unique_ptr<gpu::Runtime>> runtimes_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
  int exit_code_ = -1;
  std::string error_;
};

// Deterministic RGB8 test pixels (packed rows).
std::vector<uint8_t> test_image(uint32_t height, uint32_t width, uint32_t seed);

}  // namespace recon::daemon::testing
