// The alignment's worker threads: see worker_pool.h.
#include "gpu/reconstruct/worker_pool.h"

#include <chrono>

namespace recon::gpu::sga {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// How long an idle worker spins before it sleeps: longer than the serial work between two jobs of
// one iteration, short enough not to matter to other processes.
constexpr std::chrono::microseconds kSpin{200};

}  // namespace

WorkerPool::WorkerPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  if (threads <= 0) threads = 1;
  workers_.reserve(static_cast<std::size_t>(threads - 1));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true, std::memory_order_release);
  }
  start_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void WorkerPool::drain() {
  for (int task = next_.fetch_add(1, std::memory_order_relaxed); task < count_;
       task = next_.fetch_add(1, std::memory_order_relaxed)) {
    call_(ctx_, task);
  }
}

void WorkerPool::run_impl(int count, Call call, const void* ctx) {
  if (count <= 0) return;
  if (workers_.empty() || count == 1) {
    for (int task = 0; task < count; ++task) call(ctx, task);
    return;
  }
  call_ = call;
  ctx_ = ctx;
  count_ = count;
  next_.store(0, std::memory_order_relaxed);
  busy_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    // Publishing under the mutex means a worker about to sleep either sees the new generation or
    // is already waiting when notify_all() comes.
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_cv_.notify_all();
  drain();
  while (busy_.load(std::memory_order_acquire) != 0) cpu_relax();
}

void WorkerPool::worker_loop() {
  std::uint64_t seen = 0;
  for (;;) {
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    int polls = 0;
    while (generation_.load(std::memory_order_acquire) == seen && !stopping_.load(std::memory_order_acquire)) {
      cpu_relax();
      if (++polls % 64 == 0 && std::chrono::steady_clock::now() > spin_until) {
        std::unique_lock<std::mutex> lock(mutex_);
        start_cv_.wait(lock, [&] {
          return stopping_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
        });
      }
    }
    if (stopping_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    drain();
    busy_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace recon::gpu::sga
