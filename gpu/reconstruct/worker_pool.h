// A fixed set of worker threads for the alignment's data-parallel loops (gpu/reconstruct/).
// run() hands out task indices; every task writes only its own output slot and callers reduce the
// slots in task order, so results never depend on which thread ran what. Not for blocking work.
// An iteration dispatches a few short jobs back to back, so idle workers spin briefly before they
// sleep: waking sleeping threads would cost more than the jobs themselves.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace recon::gpu::sga {

class WorkerPool {
 public:
  // `threads` <= 0 means std::thread::hardware_concurrency(). The calling thread is one of them.
  explicit WorkerPool(int threads = 0);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(task) for every task in [0, count) and returns when all calls have returned. No
  // allocation: the callable is passed by address. Not reentrant: one run() at a time.
  template <typename Fn>
  void run(int count, Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    run_impl(
        count, [](const void* ctx, int task) { (*static_cast<F*>(const_cast<void*>(ctx)))(task); },
        static_cast<const void*>(&fn));
  }

 private:
  using Call = void (*)(const void*, int);
  void run_impl(int count, Call call, const void* ctx);
  void worker_loop();
  void drain();

  std::vector<std::thread> workers_;
  std::mutex mutex_;  // with start_cv_: sleeping workers; the job fields are published by generation_
  std::condition_variable start_cv_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<int> busy_{0};  // workers that have not finished the current generation
  Call call_ = nullptr;
  const void* ctx_ = nullptr;
  int count_ = 0;
  std::atomic<int> next_{0};
};

}  // namespace recon::gpu::sga
