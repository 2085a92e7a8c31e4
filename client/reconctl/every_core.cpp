// Independent tasks on every core: see every_core.h.
#include "every_core.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace reconctl {

std::vector<recon::Status> run_on_every_core(const std::vector<std::function<recon::Status()>>& tasks) {
  std::vector<recon::Status> statuses(tasks.size());
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t t = next++; t < tasks.size(); t = next++) statuses[t] = tasks[t]();
  };
  const size_t threads = std::min<size_t>(tasks.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();
  return statuses;
}

}  // namespace reconctl
