// FakeDaemon: a stand-in for recond that speaks the real wire protocol, for librecon's and
// reconctl's tests: a ZeroMQ ROUTER on client.sock and manager.sock and the SOCK_SEQPACKET regions
// socket (sessions, memfd registration) in a private directory, served by one thread. Inference
// is fake but checkable: each output is a simple function of the input pixels (see
// expected_value()), so a test can verify that images were read from, and tensors written into,
// the right shared memory. Knobs inject errors, delays, silence and a daemon restart.
// Uses daemon/ipc for the server side of the side channel and message verification, so the
// client is tested against the daemon's own wire helpers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "recon/client/options.h"
#include "schema/common_generated.h"

namespace recon::test {

class FakeDaemon {
 public:
  FakeDaemon();
  ~FakeDaemon();
  FakeDaemon(const FakeDaemon&) = delete;
  FakeDaemon& operator=(const FakeDaemon&) = delete;

  const std::string& dir() const { return dir_; }
  client::ConnectOptions connect_options() const;

  // ---- knobs (thread-safe) -----------------------------------------------------------------
  // The next ZeroMQ request of any kind is answered with this Error.
  void fail_next(wire::ErrorCode code, const std::string& message, uint32_t retry_after_ms = 0);
  // The next ZeroMQ request is answered with its success type but no body (a hostile daemon).
  void answer_next_without_body();
  // InferPair answers wait this long.
  void set_infer_delay(std::chrono::milliseconds delay);
  // InferPair requests are never answered (until reset).
  void set_swallow_infer(bool swallow);
  // Closes every side channel, like a daemon that restarted (sessions, regions, handles gone).
  void drop_sessions();

  // ---- what happened (thread-safe) -----------------------------------------------------------
  struct Counters {
    int sessions_opened = 0, sessions_open = 0;
    int regions_registered = 0, regions_unregistered = 0, regions_alive = 0;
    int infers = 0, fetches = 0, releases = 0, handles_alive = 0;
    int status_requests = 0, manager_requests = 0;
    std::vector<std::string> last_fetch_names;
    std::string last_client_name;
    std::string last_load;           // the last LoadModel as "weights kind version backbone"
    uint32_t last_region_seals = 0;  // F_GET_SEALS of the last registered memfd
  };
  Counters counters() const;

  // What the fake puts at pixel (x, y) of output `name` ("pts3d_1", "conf_2", ...), channel c,
  // given that view's input pixel rgb.
  static float expected_value(const std::string& name, int x, int y, int c, const uint8_t* rgb);

 private:
  struct State;
  void run();

  std::string dir_;
  std::unique_ptr<State> state_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace recon::test
