// Scheduler: the bounded queue between the I/O thread and the GPU workers.
//  * Admission: at most max_queue inference items and max_fetch_queue fetch items wait at once;
//    beyond that submit() answers RESOURCE_EXHAUSTED at once (the client retries), never blocks.
//  * Fairness: each session has its own FIFO; workers serve the sessions round-robin, so a
//    client that queues 200 pairs delays another client's next pair by at most one batch.
//  * Batching: a worker takes the head request of the next session and adds the heads of other
//    sessions (then their next ones, round by round) with the same BatchKey, up to the model's
//    BatchRule (max_rows rows, waiting max_wait for more; with power_of_two, batch_size_for()).
//  * Solo items (InferBatch, Match) wait in their session's FIFO like pairs and count as one
//    request against max_queue; when one reaches the head of the served session it runs alone.
//  * Lanes: fetch items go to the fetch thread of their device (next_fetch), beside its compute;
//    control items go to the worker of their device and run before queued inferences.
//  * Shutdown: close() refuses new work and hands back everything queued (answered UNAVAILABLE
//    by the caller); workers finish what they hold and then get "closed".
// Thread safety: all members may be called from any thread; mutex_ guards all state.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <variant>
#include <vector>

#include "daemon/serving/work_items.h"
#include "gpu/status.h"

namespace recon::daemon {

struct SchedulerOptions {
  uint32_t max_queue = 256;
  uint32_t max_fetch_queue = 256;
};

// The batch size to run for `available` same-key pairs: the largest power of two ≤ available,
// or max_batch when available ≥ max_batch (the warmed sizes: warm_batch_sizes()).
uint32_t batch_size_for(size_t available, uint32_t max_batch);
// 1, 2, 4, ... < max_batch, and max_batch.
std::vector<uint32_t> warm_batch_sizes(uint32_t max_batch);

// What a device's compute thread runs (fetches go to its fetch thread).
using Work = std::variant<std::vector<BatchWork>, ControlWork, SoloWork>;

struct SchedulerStats {
  uint32_t pending = 0;  // inference + fetch + control items waiting
  uint32_t pending_infer = 0;
  uint32_t in_flight = 0;  // items (requests, fetches) a worker holds
  uint32_t capacity = 0;
  uint32_t oldest_wait_ms = 0;
  uint64_t rejected_full = 0;  // RESOURCE_EXHAUSTED answers
};

// Items taken out of the queue without running (session ended, shutdown). Destroying them frees
// their leases and reservations; the caller answers them first if it wants to.
struct DroppedJobs {
  std::vector<BatchWork> batched;
  std::vector<FetchWork> fetch;
  std::vector<ControlWork> control;
  std::vector<SoloWork> solo;
  size_t size() const { return batched.size() + fetch.size() + control.size() + solo.size(); }
};

class Scheduler {
 public:
  // `runnable(device, model)`: may this device's worker run this model's requests?
  Scheduler(SchedulerOptions options, size_t devices, std::function<bool(size_t, const std::string&)> runnable);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // RESOURCE_EXHAUSTED when the queue is full, UNAVAILABLE after close(). On failure the item is
  // destroyed here (its leases and reservation freed).
  Status submit(BatchWork job);
  Status submit(SoloWork job);
  Status submit(FetchWork job);
  Status submit(ControlWork job, size_t device);

  enum class Wait { kWork, kIdle, kClosed };
  // Worker of `device`: the next unit of work, waiting at most `idle` (kIdle then, so the worker
  // can beat its heartbeat). kClosed once close() was called and nothing is left for it.
  Wait next(size_t device, std::chrono::milliseconds idle, Work& out);
  // The worker finished `count` items it got from next().
  void finished(size_t device, size_t count);
  // Fetch thread of `device`: the next fetch, as next() (kClosed once closed and the lane is empty).
  Wait next_fetch(size_t device, std::chrono::milliseconds idle, FetchWork& out);
  // The fetch thread finished the fetch it got from next_fetch().
  void fetch_finished(size_t device);

  // Takes every queued job of `client` out (its session ended).
  DroppedJobs drop_client(ClientId client);
  // Stops admission; returns everything queued. Workers drain what they hold.
  DroppedJobs close();
  bool closed() const;
  // Nothing queued and nothing in flight.
  bool idle() const;

  SchedulerStats stats(SteadyClock::time_point now = SteadyClock::now()) const;

 private:
  struct Queued {
    std::variant<BatchWork, SoloWork> job;
    SteadyClock::time_point enqueued;
  };
  Status enqueue_locked(ClientId client, std::variant<BatchWork, SoloWork> job);
  bool runnable_on(const Queued& queued, size_t device) const;
  // Picks the next work for `device` under the lock: a solo item or a batch; nullopt when nothing
  // runnable is queued, or when the batch should wait for more requests until `wait_until`.
  std::optional<Work> take_locked(size_t device, std::optional<SteadyClock::time_point>& wait_until);
  // Takes the served session's head out and moves the session to the back of the ring.
  void served_locked(ClientId client, size_t taken);

  const SchedulerOptions options_;
  const std::function<bool(size_t, const std::string&)> runnable_;

  mutable std::mutex mutex_;
  std::condition_variable work_;
  bool closed_ = false;
  std::unordered_map<ClientId, std::deque<Queued>> per_client_;
  std::deque<ClientId> ring_;  // sessions with queued requests, next to serve first
  uint32_t pending_infer_ = 0;
  std::vector<std::deque<FetchWork>> fetch_lanes_;
  std::vector<std::deque<ControlWork>> control_lanes_;
  uint32_t pending_fetch_ = 0;
  std::vector<uint32_t> in_flight_;        // items the compute threads hold
  std::vector<uint32_t> fetch_in_flight_;  // fetches the fetch threads hold
  uint64_t rejected_full_ = 0;
};

}  // namespace recon::daemon
