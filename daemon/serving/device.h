// Device: one GPU as the server sees it — its gpu::Runtime and the models loaded on it (one
// ModelInstance each, made by its kind's row in model_kind.h, plus the device's MatchInstance), and
// a catalog of their states that any thread may read (admission, status). Instances are created,
// warmed, run and destroyed only by the device's worker thread (daemon/server/gpu_worker.h); the
// catalog is the only part other threads touch.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/serving/image_size.h"
#include "daemon/serving/model.h"
#include "daemon/serving/model_instance.h"
#include "gpu/runtime.h"
#include "gpu/status.h"

namespace recon::daemon {

class MatchInstance;

class Device {
 public:
  Device(size_t index, gpu::Runtime& runtime);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  size_t index() const { return index_; }
  gpu::Runtime& runtime() { return runtime_; }

  // ---- worker thread only ----
  // Loads `spec` through its kind's row and makes the model known: state kWarming (the caller
  // warms it, warmup.h, or marks it ready). An unknown kind, or a name already present (and not
  // failed) → INVALID_ARGUMENT. A failed load leaves a kFailed entry behind (status shows why).
  Status load(const ModelSpec& spec);
  // ModelInstance::warm of `name`; the size joins the catalog's warmed resolutions.
  Status warm(const std::string& name, ImageSize size, uint32_t batch);
  // Reloads a ready model in place: loads `spec` (same name and kind) beside it, warms the new
  // instance at every (size, batch) of `warm`, then swaps it in and destroys the old one. The model
  // stays ready throughout: its requests wait behind this work instead of failing, and results it
  // made keep their own tensors. On any failure the old instance keeps serving, unchanged.
  Status reload(const ModelSpec& spec, const std::vector<std::pair<ImageSize, uint32_t>>& warm);
  // Destroys the instance (the caller has finished every job on it).
  Status unload(const std::string& name);
  // The instance of a loaded model of kind `Kind` (in any state), or only of a ready one; nullptr
  // when absent, not ready or of another kind.
  template <class Kind>
  Kind* loaded(const std::string& name) {
    auto it = instances_.find(name);
    return it == instances_.end() ? nullptr : dynamic_cast<Kind*>(it->second.get());
  }
  template <class Kind>
  Kind* ready(const std::string& name) {
    return model_ready(name) ? loaded<Kind>(name) : nullptr;
  }
  MatchInstance& matcher() { return *matcher_; }

  // ---- any thread ----
  void set_state(const std::string& name, ModelState state, const std::string& error = {});
  std::optional<ModelInfo> model(const std::string& name) const;
  bool model_ready(const std::string& name) const;
  // Why `name` has no ready instance here: UNAVAILABLE with its state, or NOT_FOUND.
  Status missing(const std::string& name) const;
  std::vector<ModelInfo> models() const;
  uint64_t weight_bytes() const;
  // Out of rotation for good (the GPU was lost): no model of it counts as ready, so the scheduler
  // gives its share of the queue to the other devices; work that must run here (fetches of its
  // results, steps pinned to it) fails with `why`. The first call wins.
  void mark_lost(const Status& why);
  bool lost() const { return lost_.load(std::memory_order_acquire); }
  // UNAVAILABLE with the reason once lost(), else OK.
  Status lost_status() const;
  // Work items (pairs, batch requests, matches, job steps) the device's worker has taken to run
  // (counted before each runs, so before its answer leaves).
  void count_work(uint64_t items) { work_items_.fetch_add(items, std::memory_order_relaxed); }
  uint64_t work_items() const { return work_items_.load(std::memory_order_relaxed); }

 private:
  // Enters `info` in the catalog as loading, unless a model of its name is there and has not failed.
  Status begin_loading(const ModelInfo& info);
  const size_t index_;
  gpu::Runtime& runtime_;
  std::map<std::string, std::unique_ptr<ModelInstance>> instances_;  // worker thread only
  std::unique_ptr<MatchInstance> matcher_;                           // worker thread only

  std::atomic<uint64_t> work_items_{0};
  std::atomic<bool> lost_{false};

  mutable std::mutex mutex_;  // guards catalog_ and lost_why_
  Status lost_why_ = Status::ok();
  std::map<std::string, ModelInfo> catalog_;
};

}  // namespace recon::daemon
