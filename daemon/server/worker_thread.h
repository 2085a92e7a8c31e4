// WorkerThread: a worker's thread and its liveness, shared by GpuWorker and FetchWorker. start()
// runs the loop on a thread; running() is true until the loop returns; the loop calls beat()
// whenever it is idle or finishes a unit of work, and heartbeat() is the time of the last beat
// (the I/O thread pings systemd's watchdog only while every heartbeat is fresh).
// Thread safety: beat() on the worker's thread, the rest from any; the destructor joins.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <utility>

#include "daemon/serving/request_context.h"

namespace recon::daemon {

class WorkerThread {
 public:
  WorkerThread() { beat(); }
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;
  ~WorkerThread() { join(); }

  void start(std::function<void()> loop) {
    running_ = true;
    thread_ = std::thread([this, loop = std::move(loop)] {
      loop();
      running_ = false;
    });
  }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  bool running() const { return running_.load(); }

  void beat() { heartbeat_.store(SteadyClock::now().time_since_epoch().count(), std::memory_order_relaxed); }
  SteadyClock::time_point heartbeat() const {
    return SteadyClock::time_point(SteadyClock::duration(heartbeat_.load(std::memory_order_relaxed)));
  }

 private:
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<SteadyClock::rep> heartbeat_{0};
};

}  // namespace recon::daemon
