// JobRunner: runs the admitted long jobs (daemon/serving/jobs/job.h), each on a thread of its own,
// at most max_running at once, and is their JobContext:
//  * device steps go to the Scheduler as the job's session's work (DeviceStep), so they take turns
//    with every other session's requests; a full queue delays a step, it does not fail the job;
//  * progress becomes JobEvent answers (final = false), at most one per event interval unless it
//    carries a message, starts a stage or ends one;
//  * the outputs become one result handle (reserved at admission), sent in the final JobEvent.
// Cancellation: CancelJob, the end of the job's session and stop() raise the job's flag; the job
// sees it at its next check or device step. A cancelled job is answered CANCELLED, one stopped by
// shutdown UNAVAILABLE; one whose session ended is not answered (nobody listens).
// Thread safety: every member may be called from any thread; mutex_ guards the job list.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "daemon/server/outbox.h"
#include "daemon/serving/jobs/job.h"
#include "daemon/serving/responder.h"
#include "daemon/serving/result_store.h"
#include "daemon/serving/scheduler.h"

namespace recon::daemon {

// An admitted job, ready to run.
struct JobTicket {
  RequestContext context;
  std::string name;  // "reconstruct"
  std::unique_ptr<Job> job;
  HandleReservation reservation;  // for its outputs
};

struct JobRunnerOptions {
  uint32_t max_running = 2;     // over all clients
  uint32_t max_per_client = 1;  // of one session: another client always finds a slot
  std::chrono::milliseconds event_interval{100};
};

class JobRunner {
 public:
  JobRunner(Scheduler& scheduler, ResultStore& store, Outbox& outbox, JobRunnerOptions options);
  ~JobRunner();  // stop(), then waits for every job's thread
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  // RESOURCE_EXHAUSTED when max_running jobs run already; UNAVAILABLE after stop().
  Status start(JobTicket ticket);
  // True when the job of `client` started by request `request_id` was running and now stops.
  bool cancel(ClientId client, uint64_t request_id);
  // The session ended: its jobs stop without an answer.
  void cancel_client(ClientId client);
  // Tells every job to stop (answered UNAVAILABLE) and refuses new ones; does not wait.
  void stop();
  // Jobs whose threads have not finished.
  uint32_t running() const;

 private:
  class Running;
  void run(Running& running);
  // Joins the threads of finished jobs; mutex_ held.
  void reap_locked();

  Scheduler& scheduler_;
  ResultStore& store_;
  Outbox& outbox_;
  const JobRunnerOptions options_;

  mutable std::mutex mutex_;
  std::list<std::unique_ptr<Running>> jobs_;
  bool stopped_ = false;
};

}  // namespace recon::daemon
