// Device: one GPU as the server sees it — its gpu::Runtime and the models loaded on it (one
// ModelInstance each, model_instance.h, plus the device's MatchInstance), and a catalog of their
// states that any thread may read (admission, status). Instances are created, warmed, run and
// destroyed only by the device's worker thread (gpu_worker.h); the catalog is the only part other
// threads touch.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/server/image_size.h"
#include "daemon/server/model_instance.h"
#include "gpu/models/mast3r/mast3r_forward.h"
#include "gpu/runtime.h"
#include "gpu/status.h"

namespace recon::daemon {

// Output names of a MASt3R pair (DESIGN.md §4), in the order results list them.
inline constexpr const char* kMast3rOutputs[] = {"pts3d_1", "pts3d_2", "conf_1",      "conf_2",
                                                 "desc_1",  "desc_2",  "desc_conf_1", "desc_conf_2"};

enum class ModelState { kLoading, kWarming, kReady, kFailed, kUnloading };
const char* model_state_name(ModelState state);

// What the I/O thread knows about a model (a copy: no engine pointer).
struct ModelInfo {
  std::string name;
  std::string kind = "mast3r";
  std::string path;
  ModelState state = ModelState::kLoading;
  gpu::Precision precision = gpu::Precision::kF32;
  std::vector<ImageSize> resolutions;  // warmed (view 1 = view 2 = this size)
  uint64_t weight_bytes = 0;
  std::string error;  // why kFailed
  uint32_t patch_size = 16;
  uint32_t default_long_side = 512;  // max(img_size): the official loader's "size"
  uint32_t desc_dim = 24;
  std::string backbone;  // kind "retrieval": the mast3r model whose encoder feeds it
};

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
  // Loads weights and makes the model known (state kWarming until mark_ready). A name already
  // present → INVALID_ARGUMENT. Failures leave a kFailed entry behind (status shows why).
  Status load_model(const std::string& name, const std::string& path, gpu::Precision precision);
  // Builds and runs the graph of one shape; adds the resolution to the catalog when the two
  // views share a size.
  Status warm(const std::string& name, const gpu::ForwardShape& shape);
  // Destroys the instance (the caller has finished every job on it).
  Status unload_model(const std::string& name);
  // A retrieval head on the encoder of the loaded mast3r model `backbone` (kind "retrieval",
  // ready at once: it has no graph to warm). INVALID_ARGUMENT when the backbone is not loaded or
  // its token width differs from the head's.
  Status load_retrieval(const std::string& name, const std::string& path, const std::string& backbone);
  // The instance of a ready model of kind `Kind`; nullptr when absent, not ready or of another kind.
  template <class Kind>
  Kind* ready(const std::string& name) {
    auto it = instances_.find(name);
    return it == instances_.end() || !model_ready(name) ? nullptr : dynamic_cast<Kind*>(it->second.get());
  }
  MatchInstance& matcher() { return *matcher_; }

  // ---- any thread ----
  void set_state(const std::string& name, ModelState state, const std::string& error = {});
  std::optional<ModelInfo> model(const std::string& name) const;
  bool model_ready(const std::string& name) const;
  std::vector<ModelInfo> models() const;
  uint64_t weight_bytes() const;

 private:
  // Enters `info` in the catalog as loading, unless a model of its name is there and has not failed.
  Status begin_loading(ModelInfo info);
  const size_t index_;
  gpu::Runtime& runtime_;
  std::map<std::string, std::unique_ptr<ModelInstance>> instances_;  // worker thread only
  std::unique_ptr<MatchInstance> matcher_;                           // worker thread only

  mutable std::mutex mutex_;  // guards catalog_
  std::map<std::string, ModelInfo> catalog_;
};

}  // namespace recon::daemon
