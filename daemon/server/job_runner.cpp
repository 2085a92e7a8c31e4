// JobRunner: see job_runner.h.
#include "daemon/server/job_runner.h"

#include <condition_variable>
#include <optional>
#include <utility>

#include "daemon/server/responses.h"
#include "gpu/log.h"

namespace recon::daemon {
namespace {

// How long a step waits before it asks a full queue again.
constexpr std::chrono::milliseconds kQueueFullRetry{20};

uint64_t ms_since(SteadyClock::time_point start) {
  return ns_between(start, SteadyClock::now()) / 1'000'000;
}

}  // namespace

// One job: its ticket, its thread, why it must stop, and the JobContext it runs with.
class JobRunner::Running final : public JobContext {
 public:
  enum class Stop { kNone, kCancelled, kSessionEnded, kShutdown };

  Running(JobRunner& runner, JobTicket job) : ticket(std::move(job)), runner_(runner) {}

  bool cancelled() const override { return stop.load() != Stop::kNone; }

  Status on_device(const std::string& model, std::optional<size_t> pin,
                   std::function<Status(Device& device, const WorkerContext& worker)> step) override {
    struct Wait {
      std::mutex mutex;
      std::condition_variable done;
      std::optional<Status> status;  // guarded by mutex
    };
    auto wait = std::make_shared<Wait>();
    while (true) {
      if (cancelled()) return stopped();
      // The body runs while this thread waits below, so it may use `step` by reference.
      DeviceStep device_step(
          ticket.context, model, pin,
          [this, &step](Device& device, const WorkerContext& worker) {
            return cancelled() ? stopped() : step(device, worker);
          },
          [wait](const Status& status) {
            std::lock_guard lock(wait->mutex);
            wait->status = status;
            wait->done.notify_all();
          });
      const Status submitted = runner_.scheduler_.submit(SoloWork(std::move(device_step)));
      if (submitted.code() == StatusCode::kResourceExhausted) {
        // The step was dropped (its Done ran): wait for room like a client would, then ask again.
        {
          std::lock_guard lock(wait->mutex);
          wait->status.reset();
        }
        std::this_thread::sleep_for(kQueueFullRetry);
        continue;
      }
      if (!submitted.is_ok()) return submitted;
      break;
    }
    std::unique_lock lock(wait->mutex);
    wait->done.wait(lock, [&] { return wait->status.has_value(); });
    return *wait->status;
  }

  void progress(const JobProgress& progress) override {
    const auto now = SteadyClock::now();
    const bool new_stage = progress.stage != last_stage_;
    const bool stage_done = progress.total > 0 && progress.done >= progress.total;
    if (!new_stage && !stage_done && progress.message.empty() && now - last_event_ < runner_.options_.event_interval) {
      return;
    }
    last_stage_ = progress.stage;
    last_event_ = now;
    const AnswerSinks sinks{runner_.store_, runner_.outbox_, 0};
    Responder(ticket.context, sinks)
        .partial(job_event_response(ticket.context.reply.request_id, progress, ms_since(started), nullptr, false));
  }

  // Why the job ends early, as its answer says it.
  Status stopped() const {
    switch (stop.load()) {
      case Stop::kCancelled:
        return ::recon::cancelled("the job was cancelled");
      case Stop::kShutdown:
        return unavailable("the daemon is stopping");
      case Stop::kSessionEnded:
        return unavailable("the job's session ended");
      case Stop::kNone:
        break;
    }
    return Status::ok();
  }

  JobTicket ticket;
  const SteadyClock::time_point started = SteadyClock::now();
  std::atomic<Stop> stop{Stop::kNone};
  std::atomic<bool> finished{false};
  // Until its run returns: what the limits count. Cleared before its answer leaves, so that a
  // client starting its next job on that answer finds the slot free.
  std::atomic<bool> holds_slot{true};
  std::thread thread;

 private:
  JobRunner& runner_;
  std::string last_stage_;  // job thread only
  SteadyClock::time_point last_event_;
};

JobRunner::JobRunner(Scheduler& scheduler, ResultStore& store, Outbox& outbox, JobRunnerOptions options)
    : scheduler_(scheduler), store_(store), outbox_(outbox), options_(options) {}

JobRunner::~JobRunner() {
  stop();
  // A job waiting for a queued step wakes when the closed scheduler drops it.
  for (const auto& job : jobs_) {
    if (job->thread.joinable()) job->thread.join();
  }
}

Status JobRunner::start(JobTicket ticket) {
  std::lock_guard lock(mutex_);
  if (stopped_) return unavailable("the daemon is stopping");
  reap_locked();
  uint32_t running = 0, of_client = 0;
  for (const auto& job : jobs_) {
    if (!job->holds_slot) continue;
    ++running;
    if (job->ticket.context.client() == ticket.context.client()) ++of_client;
  }
  if (of_client >= options_.max_per_client) {
    return resource_exhausted("this session already runs " + std::to_string(of_client) +
                              " job(s), the limit per client; wait for it to end (or cancel it)");
  }
  if (running >= options_.max_running) {
    return resource_exhausted(std::to_string(running) + " jobs are running, the daemon's limit; retry later");
  }
  auto started = std::make_unique<Running>(*this, std::move(ticket));
  Running& job = *started;
  jobs_.push_back(std::move(started));
  job.thread = std::thread([this, &job] {
    run(job);
    job.finished = true;
  });
  return Status::ok();
}

void JobRunner::run(Running& job) {
  const std::string what = "Job '" + job.ticket.name + "'";
  log_with_fields(LogLevel::kInfo, what + " started", request_log_fields(job.ticket.context.reply));
  Result<JobOutput> output = job.ticket.job->run(job);
  job.holds_slot = false;
  job.ticket.job.reset();  // its images' leases and host memory go now, before the answer
  if (job.stop.load() == Running::Stop::kSessionEnded) return;
  const AnswerSinks sinks{store_, outbox_, output.is_ok() ? output->device : 0};
  const Responder answer(job.ticket.context, sinks);
  if (!output.is_ok()) {
    const Status status = job.cancelled() ? job.stopped() : output.status();
    answer.fail(status, status.code() == StatusCode::kCancelled ? LogLevel::kInfo : LogLevel::kWarning, what);
    return;
  }
  StageTimes times;
  times.picked = job.started;
  times.compute_ns = ns_between(job.started, SteadyClock::now());
  times.output_start = SteadyClock::now();
  auto stored = answer.store(std::move(job.ticket.reservation), job.ticket.name, std::move(output->tensors), times);
  if (!stored.is_ok()) {
    answer.fail(stored.status(), LogLevel::kWarning, what);
    return;
  }
  const uint64_t elapsed_ms = ms_since(job.started);
  log_with_fields(LogLevel::kInfo, what + " finished in " + std::to_string(elapsed_ms) + " ms",
                  request_log_fields(job.ticket.context.reply));
  answer.finish(job_event_response(answer.request_id(), JobProgress{"done", 1, 1}, elapsed_ms, stored->get(), true));
}

bool JobRunner::cancel(ClientId client, uint64_t request_id) {
  std::lock_guard lock(mutex_);
  for (const auto& job : jobs_) {
    if (job->finished || job->ticket.context.client() != client || job->ticket.context.reply.request_id != request_id) {
      continue;
    }
    auto none = Running::Stop::kNone;
    return job->stop.compare_exchange_strong(none, Running::Stop::kCancelled);
  }
  return false;
}

void JobRunner::cancel_client(ClientId client) {
  std::lock_guard lock(mutex_);
  for (const auto& job : jobs_) {
    if (job->ticket.context.client() == client) job->stop = Running::Stop::kSessionEnded;
  }
}

void JobRunner::stop() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
  for (const auto& job : jobs_) {
    auto none = Running::Stop::kNone;
    job->stop.compare_exchange_strong(none, Running::Stop::kShutdown);
  }
}

uint32_t JobRunner::running() const {
  std::lock_guard lock(mutex_);
  uint32_t count = 0;
  for (const auto& job : jobs_) count += job->finished ? 0 : 1;
  return count;
}

void JobRunner::reap_locked() {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if ((*it)->finished) {
      (*it)->thread.join();
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace recon::daemon
