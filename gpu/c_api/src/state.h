// The objects behind runtime.h's opaque handles, and the calls every entry point shares: errors
// kept per thread, the check that a handle belongs to a context, and running an op now or
// recording it into a sequence. Nothing here is exported (runtime.map hides it).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpu/graph.h"
#include "gpu/runtime.h"
#include "gpu/status.h"
#include "gpu/tensor.h"
#include "recon/runtime.h"

namespace recon::runtime_c {

// Records one op, its operands and parameters captured, into a graph.
using Recorder = std::function<Status(gpu::Graph&)>;

struct TensorState;

// One device: the runtime, and the graphs of ops run at once, kept so that the same op on the
// same tensors replays its recording instead of recording again (the latency of an immediate call
// is then one submission and one wait).
class ContextState {
 public:
  explicit ContextState(std::unique_ptr<gpu::Runtime> runtime) : runtime_(std::move(runtime)) {}
  ~ContextState() { immediate_.clear(); }  // graphs before the runtime they were made from

  gpu::Runtime& runtime() { return *runtime_; }
  // Serialises every call on this context and its tensors and sequences.
  std::mutex& mutex() { return mutex_; }
  uint64_t next_tensor_id() { return next_tensor_id_++; }

  // Runs the op `key` names (its kind, parameters and tensor ids) now, recording it first when it
  // is not cached. Caller holds mutex().
  Status run_now(const std::string& key, std::vector<uint64_t> tensor_ids, const Recorder& record);
  // Drops the cached graphs that use a released tensor, so they keep no memory alive. Caller holds mutex().
  void forget_tensor(uint64_t id);

 private:
  struct CachedOp {
    std::string key;
    std::vector<uint64_t> tensor_ids;
    std::unique_ptr<gpu::Graph> graph;
  };
  static constexpr size_t kMaxCachedOps = 32;

  std::unique_ptr<gpu::Runtime> runtime_;
  std::mutex mutex_;
  uint64_t next_tensor_id_ = 1;
  std::list<CachedOp> immediate_;  // most recently used first
};

struct TensorState {
  std::shared_ptr<ContextState> context;  // first: outlives the tensor's memory
  uint64_t id = 0;
  gpu::Tensor tensor;
  uint32_t in_flight = 0;  // submissions of sequences using it not yet waited for (guarded by the context)
};

}  // namespace recon::runtime_c

struct recon_context {
  std::shared_ptr<recon::runtime_c::ContextState> state;
};

struct recon_tensor {
  std::shared_ptr<recon::runtime_c::TensorState> state;
};

struct recon_sequence {
  std::shared_ptr<recon::runtime_c::ContextState> context;  // first: outlives the graph
  std::vector<recon::runtime_c::Recorder> ops;
  std::vector<std::shared_ptr<recon::runtime_c::TensorState>> tensors;  // each once
  std::unique_ptr<recon::gpu::Graph> graph;                             // built by the first submit
  bool in_flight = false;
  uint64_t submitted = 0;  // timeline value of the run in flight
};

namespace recon::runtime_c {

// Keeps `message` for recon_runtime_last_error() and returns `status`.
recon_status fail(recon_status status, std::string message);
// A Status as a recon_status (its message kept), prefixed with the C function's name.
recon_status fail(const char* function, const Status& status);
// Runs `body` (which returns a recon_status), turning whatever it throws into one.
recon_status guarded(const std::function<recon_status()>& body) noexcept;
const std::string& last_error();

std::string dtype_string(recon_dtype dtype);
std::string dtype_string(gpu::DType dtype);

// INVALID_ARGUMENT unless `tensor` is a tensor of `context` (NULL allowed when `optional`).
Status check_tensor(const recon_context* context, const recon_tensor* tensor, const char* what, bool optional = false);

// The end of every op: records it into `sequence` (after checking it records cleanly into a
// scratch graph, so a refused op leaves the sequence as it was), or runs it now. `key` names the
// op and its parameters; `operands` are its tensors (NULLs skipped). Locks the context.
struct Operand {
  const char* name;  // the argument's name in runtime.h, for messages
  const recon_tensor* tensor;
};
recon_status run_or_record(const char* function, recon_context* context, recon_sequence* sequence,
                           const std::string& key, std::initializer_list<Operand> operands, Recorder record);

}  // namespace recon::runtime_c
