// A gate the tests put in ServerHooks::before_batch to hold the GPU worker before each batch
// (so requests pile up, or a client can die mid-request) until release(). wait() gives up after a
// minute so that a failing test cannot hang the suite.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace recon::daemon::testing {

struct WorkerGate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock lock(mutex);
    cv.wait_for(lock, std::chrono::seconds(60), [&] { return open; });
  }
  void release() {
    {
      std::lock_guard lock(mutex);
      open = true;
    }
    cv.notify_all();
  }
};

}  // namespace recon::daemon::testing
