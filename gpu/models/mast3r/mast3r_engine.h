// The in-process MASt3R API: load weights, warm up resolutions, infer(image pairs) → GPU tensors
// with lazy host copies and per-stage GPU timings. One engine serves one model on one device; the
// daemon wraps it, recon-infer and the tests use it directly. Calls are serialised internally.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gpu/models/mast3r/mast3r_forward.h"
#include "gpu/models/mast3r/mast3r_weights.h"
#include "gpu/runtime.h"

namespace recon::gpu {

// A uint8 RGB image already at model size (sides multiples of the patch size), rows `stride` bytes apart.
struct ImageU8View {
  const uint8_t* data = nullptr;
  int64_t height = 0, width = 0;
  size_t stride = 0;  // 0: width * 3
};

// A pair of a batch: indices into its images; `first` is view 1, `second` view 2.
struct ImagePair {
  int32_t first = 0, second = 0;
  bool operator==(const ImagePair&) const = default;
};
// N images → the N−1 pairs (0,1), (1,2), …: a video or a capture sequence.
std::vector<ImagePair> consecutive_pairs(size_t image_count);

struct Mast3rResult {
  ForwardShape shape;
  Mast3rOutputs tensors;                                 // this result's own device tensors (not reused by later calls)
  std::vector<std::pair<std::string, double>> stage_ms;  // GPU time per stage
  double gpu_ms = 0;                                     // sum of the stages
  double wall_ms = 0;                                    // upload + run + copy-out, as the caller waits for it
};

class Mast3rEngine {
 public:
  static Result<std::unique_ptr<Mast3rEngine>> load(Runtime& rt, const std::string& weights_path, Precision precision);

  // Builds (records) the graph for a shape and runs it once on synthetic images.
  Status warmup(const ForwardShape& shape);
  // view1[i] and view2[i] form pair i; all view1 images share one size, all view2 images another.
  Result<Mast3rResult> infer(std::span<const ImageU8View> view1, std::span<const ImageU8View> view2);

  // Many pairs over a set of images (any sizes), one result per pair in the order asked.
  Result<std::vector<Mast3rResult>> infer_batch(std::span<const ImageU8View> images, std::span<const ImagePair> pairs);

  const Mast3rWeights& weights() const { return *weights_; }
  const Mast3rConfig& config() const { return weights_->config(); }
  std::vector<ForwardShape> warm_shapes() const;
  // Intermediate of the most recent run at `shape` (tests, debugging); null if unknown.
  const Tensor* tap(const ForwardShape& shape, const std::string& name) const;

 private:
  Mast3rEngine(Runtime& rt) : rt_(rt) {}
  Result<Mast3rForward*> forward_for(const ForwardShape& shape);
  Result<Mast3rResult> run_locked(Mast3rForward& f, std::span<const ImageU8View> view1,
                                  std::span<const ImageU8View> view2);

  struct ShapeLess {
    bool operator()(const ForwardShape& a, const ForwardShape& b) const;
  };

  Runtime& rt_;
  std::unique_ptr<Mast3rWeights> weights_;
  mutable std::mutex mutex_;  // serialises graph builds and runs
  std::map<ForwardShape, std::unique_ptr<Mast3rForward>, ShapeLess> forwards_;
};

}  // namespace recon::gpu
