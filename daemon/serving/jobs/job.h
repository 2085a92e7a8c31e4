// Job: a long request (DESIGN.md §4), such as reconstruct, the COLMAP way: plain-data options
// parsed from the request's parameters, one run() with a stage per step, progress reported as it
// goes, and a context that says when to stop. A job runs on a job thread, never on a GPU worker:
// its GPU work is handed to the device in steps (JobContext::on_device) that wait in the session's
// queue like the session's other requests, so other clients are served between them. What it
// returns is stored as one result handle (tensors on the device, fetched like any other).
// Nothing here knows about sockets or the wire format.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/serving/image_input.h"
#include "daemon/serving/result_store.h"
#include "gpu/status.h"

namespace recon::daemon {

class Device;
struct WorkerContext;

// One progress event: `done` of `total` units of `stage` (total 0: unknown).
struct JobProgress {
  std::string stage;
  uint64_t done = 0, total = 0;
  float loss = std::nanf("");
  std::string message;  // a warning or a stage's summary; empty: none
};

// What a job works on: the model it runs, its images (leased or copied at admission) and the
// request's parameters by name.
struct JobInput {
  std::string model;
  std::vector<PendingImage> images;
  std::map<std::string, std::string> parameters;
};

// The job's outputs, created on the device in its last step; stored as one result handle.
struct JobOutput {
  std::vector<StoredTensor> tensors;
  size_t device = 0;
};

// What a running job may ask of the daemon. Thread-safe.
class JobContext {
 public:
  virtual ~JobContext() = default;
  // The client cancelled the job, its session ended, or the daemon is stopping.
  virtual bool cancelled() const = 0;
  // Runs `step` on the GPU worker of a device that has `model` ready (device `pin` only, when
  // given: where the job's earlier steps left device data), in the session's turn, and waits for
  // it. Returns what `step` returns; CANCELLED when the job was cancelled, UNAVAILABLE when the
  // step was dropped unrun (session end, shutdown).
  virtual Status on_device(const std::string& model, std::optional<size_t> pin,
                           std::function<Status(Device& device, const WorkerContext& worker)> step) = 0;
  // Sends a progress event to the client (events closer than the daemon's event interval are
  // merged, except those with a message).
  virtual void progress(const JobProgress& progress) = 0;
};

class Job {
 public:
  virtual ~Job() = default;
  // Runs to the end (CANCELLED as soon as it sees context.cancelled()).
  virtual Result<JobOutput> run(JobContext& context) = 0;
};

}  // namespace recon::daemon
