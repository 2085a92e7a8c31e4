// Scheduler: see scheduler.h.
#include "daemon/serving/scheduler.h"

#include <algorithm>

namespace recon::daemon {
namespace {

template <typename Queued>
void take_dropped(Queued& queued, DroppedJobs& dropped) {
  if (auto* item = std::get_if<BatchWork>(&queued.job)) {
    dropped.batched.push_back(std::move(*item));
  } else {
    dropped.solo.push_back(std::move(std::get<SoloWork>(queued.job)));
  }
}

}  // namespace

uint32_t batch_size_for(size_t available, uint32_t max_batch) {
  if (max_batch <= 1 || available <= 1) return 1;
  if (available >= max_batch) return max_batch;
  uint32_t size = 1;
  while (size_t{size} * 2 <= available) size *= 2;
  return size;
}

std::vector<uint32_t> warm_batch_sizes(uint32_t max_batch) {
  std::vector<uint32_t> sizes;
  for (uint32_t b = 1; b < max_batch; b *= 2) sizes.push_back(b);
  if (max_batch >= 1) sizes.push_back(max_batch);
  return sizes;
}

Scheduler::Scheduler(SchedulerOptions options, size_t devices, std::function<bool(size_t, const std::string&)> runnable)
    : options_(options),
      runnable_(std::move(runnable)),
      fetch_lanes_(devices),
      control_lanes_(devices),
      in_flight_(devices, 0),
      fetch_in_flight_(devices, 0) {}

Status Scheduler::enqueue_locked(ClientId client, std::variant<BatchWork, SoloWork> job) {
  if (closed_) return unavailable("the daemon is stopping");
  if (pending_infer_ >= options_.max_queue) {
    ++rejected_full_;
    return resource_exhausted("the inference queue is full (" + std::to_string(options_.max_queue) +
                              " requests waiting); retry later");
  }
  auto& queue = per_client_[client];
  if (queue.empty()) ring_.push_back(client);
  queue.push_back(Queued{std::move(job), SteadyClock::now()});
  ++pending_infer_;
  return Status::ok();
}

Status Scheduler::submit(BatchWork job) {
  std::unique_lock lock(mutex_);
  const ClientId client = job.context.client();
  RECON_RETURN_IF_ERROR(enqueue_locked(client, std::move(job)));
  lock.unlock();
  work_.notify_all();
  return Status::ok();
}

Status Scheduler::submit(SoloWork job) {
  std::unique_lock lock(mutex_);
  const ClientId client = std::visit([](const auto& j) { return j.context.client(); }, job);
  RECON_RETURN_IF_ERROR(enqueue_locked(client, std::move(job)));
  lock.unlock();
  work_.notify_all();
  return Status::ok();
}

Status Scheduler::submit(FetchWork job) {
  std::unique_lock lock(mutex_);
  if (closed_) return unavailable("the daemon is stopping");
  if (job.device >= fetch_lanes_.size()) return internal_error("fetch for an unknown device");
  if (pending_fetch_ >= options_.max_fetch_queue) {
    ++rejected_full_;
    return resource_exhausted("the fetch queue is full (" + std::to_string(options_.max_fetch_queue) +
                              " requests waiting); retry later");
  }
  fetch_lanes_[job.device].push_back(std::move(job));
  ++pending_fetch_;
  lock.unlock();
  work_.notify_all();
  return Status::ok();
}

Status Scheduler::submit(ControlWork job, size_t device) {
  std::unique_lock lock(mutex_);
  if (closed_) return unavailable("the daemon is stopping");
  if (device >= control_lanes_.size()) return internal_error("control job for an unknown device");
  control_lanes_[device].push_back(std::move(job));
  lock.unlock();
  work_.notify_all();
  return Status::ok();
}

bool Scheduler::runnable_on(const Queued& queued, size_t device) const {
  const auto runs_here = [&](const auto& work) {
    const Placement where = placement(work);
    return where.device ? *where.device == device : runnable_(device, *where.model);
  };
  if (const auto* item = std::get_if<BatchWork>(&queued.job)) return runs_here(*item);
  return std::visit(runs_here, std::get<SoloWork>(queued.job));
}

void Scheduler::served_locked(ClientId client, size_t taken) {
  auto& queue = per_client_[client];
  for (size_t n = 0; n < taken; ++n) queue.pop_front();
  // Served: to the back of the ring (or out of it when nothing is left).
  ring_.erase(std::find(ring_.begin(), ring_.end(), client));
  if (queue.empty()) {
    per_client_.erase(client);
  } else {
    ring_.push_back(client);
  }
  pending_infer_ -= static_cast<uint32_t>(taken);
}

std::optional<Work> Scheduler::take_locked(size_t device, std::optional<SteadyClock::time_point>& wait_until) {
  wait_until.reset();
  size_t head = ring_.size();
  for (size_t i = 0; i < ring_.size(); ++i) {
    const auto& queue = per_client_[ring_[i]];
    if (!queue.empty() && runnable_on(queue.front(), device)) {
      head = i;
      break;
    }
  }
  if (head == ring_.size()) return std::nullopt;
  Queued& first = per_client_[ring_[head]].front();
  if (auto* solo = std::get_if<SoloWork>(&first.job)) {
    Work work = std::move(*solo);
    served_locked(ring_[head], 1);
    return work;
  }
  const BatchWork& lead = std::get<BatchWork>(first.job);
  const BatchKey key = lead.key;
  const BatchRule rule = lead.rule;
  const bool batching = rule.max_rows > 1;
  const auto same_key = [&](const Queued& q) {
    const auto* item = std::get_if<BatchWork>(&q.job);
    return item != nullptr && item->key == key;
  };

  // Per session (in ring order from the head): how many of its first requests share the key, and
  // their rows.
  struct Prefix {
    ClientId client;
    size_t items;
  };
  std::vector<Prefix> prefixes;
  size_t available = 0;  // rows
  for (size_t k = 0; k < ring_.size(); ++k) {
    const ClientId client = ring_[(head + k) % ring_.size()];
    const auto& queue = per_client_[client];
    size_t prefix = 0;
    if (batching) {
      while (prefix < queue.size() && same_key(queue[prefix])) {
        available += std::get<BatchWork>(queue[prefix].job).rows;
        ++prefix;
      }
    } else if (k == 0) {
      prefix = 1;
      available = lead.rows;
    }
    if (prefix > 0) prefixes.push_back({client, prefix});
  }
  // The largest preferred size the queued rows fill goes at once (Triton's dynamic batcher).
  uint32_t preferred = 0;
  for (uint32_t p : rule.preferred) {
    if (p <= available && p <= rule.max_rows) preferred = p;
  }
  if (batching && preferred == 0 && available < rule.max_rows && rule.max_wait.count() > 0 && !closed_) {
    const auto deadline = first.enqueued + rule.max_wait;
    if (SteadyClock::now() < deadline) {
      wait_until = deadline;
      return std::nullopt;
    }
  }
  const size_t rows = preferred > 0       ? preferred
                      : rule.power_of_two ? batch_size_for(available, rule.max_rows)
                                          : std::min<size_t>(available, std::max<uint32_t>(rule.max_rows, 1));

  // Round-robin over the sessions: one request each per round, while the rows fit (the head always
  // runs: admission bounds a request's rows by max_rows). A session stops at its first request
  // that does not fit, so that its requests keep their order.
  std::vector<size_t> take(prefixes.size(), 0);
  std::vector<bool> blocked(prefixes.size(), false);
  size_t taken = 0;
  bool progress = true;
  for (size_t round = 0; progress && taken < rows; ++round) {
    progress = false;
    for (size_t i = 0; i < prefixes.size() && taken < rows; ++i) {
      if (blocked[i] || round >= prefixes[i].items) continue;
      const auto& queued = per_client_[prefixes[i].client][take[i]];
      const uint32_t r = std::get<BatchWork>(queued.job).rows;
      if (taken > 0 && taken + r > rows) {
        blocked[i] = true;
        continue;
      }
      ++take[i];
      taken += r;
      progress = true;
    }
  }
  std::vector<BatchWork> batch;
  for (size_t i = 0; i < prefixes.size(); ++i) {
    if (take[i] == 0) continue;
    auto& queue = per_client_[prefixes[i].client];
    for (size_t n = 0; n < take[i]; ++n) batch.push_back(std::move(std::get<BatchWork>(queue[n].job)));
    served_locked(prefixes[i].client, take[i]);
  }
  return Work(std::move(batch));
}

Scheduler::Wait Scheduler::next(size_t device, std::chrono::milliseconds idle, Work& out) {
  std::unique_lock lock(mutex_);
  const auto idle_deadline = SteadyClock::now() + idle;
  while (true) {
    if (!control_lanes_[device].empty()) {
      out = std::move(control_lanes_[device].front());
      control_lanes_[device].pop_front();
      ++in_flight_[device];
      return Wait::kWork;
    }
    std::optional<SteadyClock::time_point> batch_wait;
    if (std::optional<Work> work = take_locked(device, batch_wait)) {
      const auto* batch = std::get_if<std::vector<BatchWork>>(&*work);
      in_flight_[device] += batch != nullptr ? static_cast<uint32_t>(batch->size()) : 1;
      out = std::move(*work);
      return Wait::kWork;
    }
    if (closed_ && !batch_wait) return Wait::kClosed;
    if (SteadyClock::now() >= idle_deadline) return Wait::kIdle;
    work_.wait_until(lock, batch_wait ? std::min(*batch_wait, idle_deadline) : idle_deadline);
  }
}

void Scheduler::finished(size_t device, size_t count) {
  std::lock_guard lock(mutex_);
  in_flight_[device] -= std::min<uint32_t>(in_flight_[device], static_cast<uint32_t>(count));
}

Scheduler::Wait Scheduler::next_fetch(size_t device, std::chrono::milliseconds idle, FetchWork& out) {
  std::unique_lock lock(mutex_);
  const auto idle_deadline = SteadyClock::now() + idle;
  while (true) {
    if (!fetch_lanes_[device].empty()) {
      out = std::move(fetch_lanes_[device].front());
      fetch_lanes_[device].pop_front();
      --pending_fetch_;
      ++fetch_in_flight_[device];
      return Wait::kWork;
    }
    if (closed_) return Wait::kClosed;
    if (SteadyClock::now() >= idle_deadline) return Wait::kIdle;
    work_.wait_until(lock, idle_deadline);
  }
}

void Scheduler::fetch_finished(size_t device) {
  std::lock_guard lock(mutex_);
  if (fetch_in_flight_[device] > 0) --fetch_in_flight_[device];
}

DroppedJobs Scheduler::drop_client(ClientId client) {
  DroppedJobs dropped;
  std::lock_guard lock(mutex_);
  auto it = per_client_.find(client);
  if (it != per_client_.end()) {
    for (Queued& q : it->second) take_dropped(q, dropped);
    pending_infer_ -= static_cast<uint32_t>(it->second.size());
    per_client_.erase(it);
    ring_.erase(std::remove(ring_.begin(), ring_.end(), client), ring_.end());
  }
  for (auto& lane : fetch_lanes_) {
    for (auto job = lane.begin(); job != lane.end();) {
      if (job->context.client() == client) {
        dropped.fetch.push_back(std::move(*job));
        job = lane.erase(job);
        --pending_fetch_;
      } else {
        ++job;
      }
    }
  }
  return dropped;
}

DroppedJobs Scheduler::close() {
  DroppedJobs dropped;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    for (const ClientId client : ring_) {
      for (Queued& q : per_client_[client]) take_dropped(q, dropped);
    }
    per_client_.clear();
    ring_.clear();
    pending_infer_ = 0;
    for (auto& lane : fetch_lanes_) {
      for (FetchWork& job : lane) dropped.fetch.push_back(std::move(job));
      lane.clear();
    }
    pending_fetch_ = 0;
    for (auto& lane : control_lanes_) {
      for (ControlWork& job : lane) dropped.control.push_back(std::move(job));
      lane.clear();
    }
  }
  work_.notify_all();
  return dropped;
}

bool Scheduler::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

bool Scheduler::idle() const {
  std::lock_guard lock(mutex_);
  if (pending_infer_ != 0 || pending_fetch_ != 0) return false;
  for (const auto& lane : control_lanes_) {
    if (!lane.empty()) return false;
  }
  for (uint32_t n : in_flight_) {
    if (n != 0) return false;
  }
  for (uint32_t n : fetch_in_flight_) {
    if (n != 0) return false;
  }
  return true;
}

SchedulerStats Scheduler::stats(SteadyClock::time_point now) const {
  std::lock_guard lock(mutex_);
  SchedulerStats s;
  s.pending_infer = pending_infer_;
  s.pending = pending_infer_ + pending_fetch_;
  for (const auto& lane : control_lanes_) s.pending += static_cast<uint32_t>(lane.size());
  for (uint32_t n : in_flight_) s.in_flight += n;
  for (uint32_t n : fetch_in_flight_) s.in_flight += n;
  s.capacity = options_.max_queue;
  s.rejected_full = rejected_full_;
  for (const auto& [_, queue] : per_client_) {
    if (queue.empty()) continue;
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - queue.front().enqueued).count();
    s.oldest_wait_ms = std::max<uint32_t>(s.oldest_wait_ms, static_cast<uint32_t>(std::max<int64_t>(waited, 0)));
  }
  return s;
}

}  // namespace recon::daemon
