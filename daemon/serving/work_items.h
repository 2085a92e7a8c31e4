// The work items that travel from the I/O thread through the Scheduler to a GPU worker (…Work;
// "jobs" are the long ones of daemon/serving/jobs/, whose device steps travel as DeviceStep), each
// with its RequestContext (where the answer goes, session, TTL, deadline). A work item owns (in its
// kind's Body) everything its request needs until it is answered: region leases (so client memory
// stays mapped), the handle reservation (so quotas count it), the results it reads (shared_ptr: a
// concurrent Release cannot free one mid-copy). Dropping one at any point frees all of that (RAII).
// Plain data; the kinds' bodies run the requests.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "daemon/ipc/shm_registry.h"
#include "daemon/serving/model.h"
#include "daemon/serving/request_context.h"
#include "daemon/serving/result_store.h"

namespace recon::daemon {

class Device;
struct WorkerContext;

// What must match for requests to share one engine call: the model, and what its kind makes of
// the inputs' shapes (MASt3R: both image sizes; onnx: every input's dims after the batch axis).
struct BatchKey {
  std::string model;
  std::string shapes;
  bool operator==(const BatchKey&) const = default;
};

// A request that the Scheduler may run in one engine call with other sessions' requests of the
// same BatchKey (InferPair; an onnx request of a model with dynamic batching). `rows` is what it
// adds to the call (a pair: 1; an onnx request: its batch dimension); the model's BatchRule says
// how many rows one call takes and how long the first may wait for more. The kind's `run` runs a
// batch on a device where the model is ready; `body` is the kind's own data (its inputs, outputs
// wanted, handle reservation), which only `run` reads.
struct BatchWork {
  class Body {
   public:
    virtual ~Body() = default;
  };
  using Run = void (*)(std::vector<BatchWork> batch, Device& device, const WorkerContext& worker);
  RequestContext context;
  BatchKey key;
  BatchRule rule;
  uint32_t rows = 1;
  Run run = nullptr;
  std::unique_ptr<Body> body;
};

inline void run_work(std::vector<BatchWork> batch, Device& device, const WorkerContext& worker) {
  const BatchWork::Run run = batch.front().run;  // a batch shares its key, so its kind
  run(std::move(batch), device, worker);
}

// A request that runs alone (InferBatch, Match, EncodeRetrieval, an onnx request): its kind's
// admission packs what runs into `body` (the kind's own class, in its folder), and a worker runs it
// on a device where `model` is ready (exactly `device` when set: a match runs where its
// descriptors are). A new kind therefore adds nothing to this file or to the scheduler.
struct KindWork {
  class Body {
   public:
    virtual ~Body() = default;
    // On `device`'s worker thread; answers (or fails) through worker.responder(context) once.
    virtual void run(RequestContext context, Device& device, const WorkerContext& worker) = 0;
  };
  RequestContext context;
  std::string model;
  std::optional<size_t> device;  // set when an input lies on one device (a result it reads)
  std::unique_ptr<Body> body;
};

inline void run_work(KindWork work, Device& device, const WorkerContext& worker) {
  work.body->run(std::move(work.context), device, worker);
}

// One step of a long job's GPU work (JobContext::on_device): runs on a worker of a device where
// `model` is ready (that of `device` when set), in the session's turn. `done` gets what the step returned, or why it
// never ran when it is dropped (its session ended, shutdown: UNAVAILABLE), exactly once, so that the job waiting on it
// always wakes.
class DeviceStep {
 public:
  using Body = std::function<Status(Device&, const WorkerContext&)>;
  using Done = std::function<void(const Status&)>;
  DeviceStep(RequestContext context, std::string model, std::optional<size_t> device, Body body, Done done)
      : context(std::move(context)),
        model(std::move(model)),
        device(device),
        body_(std::move(body)),
        done_(std::move(done)) {}
  DeviceStep(DeviceStep&& other) noexcept
      : context(std::move(other.context)),
        model(std::move(other.model)),
        device(other.device),
        body_(std::move(other.body_)),
        done_(std::exchange(other.done_, nullptr)) {}
  DeviceStep& operator=(DeviceStep&& other) noexcept {
    if (this != &other) {
      drop(unavailable("the job's step was replaced unrun"));
      context = std::move(other.context);
      model = std::move(other.model);
      device = other.device;
      body_ = std::move(other.body_);
      done_ = std::exchange(other.done_, nullptr);
    }
    return *this;
  }
  DeviceStep(const DeviceStep&) = delete;
  ~DeviceStep() { drop(unavailable("the job's session ended or the daemon is stopping")); }

  void run(Device& device, const WorkerContext& worker) {
    if (done_) std::exchange(done_, nullptr)(body_(device, worker));
  }
  void drop(const Status& why) {
    if (done_) std::exchange(done_, nullptr)(why);
  }

  RequestContext context;
  std::string model;
  std::optional<size_t> device;

 private:
  Body body_;
  Done done_;
};

// A job's step runs itself (GpuWorker calls run_work on every work item it takes).
inline void run_work(DeviceStep step, Device& device, const WorkerContext& worker) {
  step.run(device, worker);
}

// Where a work item may run (the Scheduler asks): a device whose `model` is ready, or exactly
// `device` when set (a match runs where its descriptors are; a job's step where its data is).
struct Placement {
  const std::string* model = nullptr;  // the item's own (no copy: the scheduler asks under its lock)
  std::optional<size_t> device;
};
inline Placement placement(const BatchWork& w) {
  return {&w.key.model, std::nullopt};
}
inline Placement placement(const DeviceStep& w) {
  return {&w.model, w.device};
}
inline Placement placement(const KindWork& w) {
  return {&w.model, w.device};
}

// Requests that run alone (never batched with other sessions' requests) but wait in the session's
// FIFO like pairs, so that fairness and the queue bound cover them too.
using SoloWork = std::variant<KindWork, DeviceStep>;

struct FetchWork {
  RequestContext context;
  size_t device = 0;
  std::shared_ptr<const StoredResult> result;
  std::vector<size_t> tensors;  // indices into result->tensors
  // Region destination: the whole region leased, and each tensor's offset in it. Inline: empty.
  RegionLease destination;
  std::vector<uint64_t> offsets;
  bool release = false;
};

// Management work (start-up, Warmup, LoadModel, UnloadModel): runs on the device's worker and
// returns the whole success answer, or the Status the worker turns into an Error answer; both
// leave through the request's Responder. A management request runs as one item per device
// (Server::submit_on_every_device): only the item that finishes last answers, the others return
// nullopt. An item without a context (the start-up) reports through its own means (the Outbox's
// StartupDone).
struct ControlWork {
  std::optional<RequestContext> context;
  std::string what;  // for logs
  std::function<Result<std::optional<std::vector<uint8_t>>>(Device&)> run;
};

}  // namespace recon::daemon
