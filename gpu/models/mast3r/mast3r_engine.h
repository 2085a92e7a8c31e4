// The in-process MASt3R API: load weights, warm up resolutions, infer(image pairs) → GPU tensors
// with lazy host copies and per-stage GPU timings; infer_batch(images, pairs) encodes each image
// once and pipelines the pairs; encode(images) → encoder tokens; encode_images + infer_encoded
// keep images encoded across calls (a reconstruction's pairs). One engine serves one model on one
// device; the daemon wraps it, recon-infer and the tests use it directly. Calls are serialised
// internally.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gpu/models/mast3r/mast3r_batch_runner.h"
#include "gpu/models/mast3r/mast3r_forward.h"
#include "gpu/models/mast3r/mast3r_weights.h"
#include "gpu/runtime.h"

namespace recon::gpu {

// A uint8 RGB image already at model size (sides multiples of the patch size), rows `stride` bytes apart.
struct ImageU8View {
  const uint8_t* data = nullptr;
  int64_t height = 0, width = 0;
  size_t stride = 0;  // 0: width * 3
  // Optional device source: a packed uint8 [height, width, 3] tensor, fully written (no GPU work
  // on it still pending) when the call starts. When set, the engine copies it on the GPU into its
  // input and ignores `data` and `stride`.
  const Tensor* device = nullptr;
};

struct Mast3rResult {
  ForwardShape shape;
  Mast3rOutputs tensors;                                 // this result's own device tensors (not reused by later calls)
  std::vector<std::pair<std::string, double>> stage_ms;  // GPU time per stage
  double gpu_ms = 0;                                     // sum of the stages
  double wall_ms = 0;                                    // upload + run, as the caller waits for it
  // GPU time from the call's first copy in to the end of its last graph, gaps included (a batch's pairs
  // share their call's span); wall_ms minus this is the host's share.
  double gpu_span_ms = 0;
};

// How infer_batch groups its work. One pair's decoder and heads leave most of a large GPU idle
// (docs/PERFORMANCE.md: batch 8 runs a pair in about 0.65× the time of batch 1, fp16-heads on an
// H200), so pairs run batched; each batch size is another recorded graph per shape, with
// activations of its own.
struct Mast3rBatchOptions {
  int64_t encode_chunk = 4;  // images of one size per encoder run, 1..64
  int64_t pair_batch = 4;    // pairs of one shape per decoder+heads run, 1..64
};

class Mast3rEngine;

struct EncodedPairOptions {
  // false: view 2's DPT head does not run, and the results have no pts3d[1] and conf[1]
  // (ForwardShape::view2_points).
  bool view2_points = true;
};

// Images encoded once for many infer_encoded calls: each image's encoder output, in the engine's
// trunk dtype, stays on the device until this is dropped. Made by Mast3rEngine::encode_images (of
// the engine that reads it); append() joins two sets of one engine, the second's images numbered
// after the first's.
class EncodedImages {
 public:
  size_t size() const { return sizes_.size(); }
  ViewSize image_size(size_t i) const { return sizes_.at(i); }
  Status append(EncodedImages other);

  // One encoder run's output: its tokens ([rows, N, C] after enc_norm, as Mast3rEngine::encode
  // gives them) and the image of each row, so that other heads (retrieval) can read them too.
  struct Run {
    const Tensor* tokens = nullptr;
    std::vector<size_t> images;
  };
  std::vector<Run> runs() const;
  // Whether `engine` made these encodings (infer_encoded refuses another engine's).
  bool encoded_by(const Mast3rEngine& engine) const { return engine_ == &engine; }

 private:
  friend class Mast3rEngine;
  std::vector<ViewSize> sizes_;   // per image
  std::vector<EncodeStep> runs_;  // the encoder runs' tokens; done (no encoder to run)
  std::vector<TokenRow> row_of_;  // per image: its run and row
  const Mast3rEngine* engine_ = nullptr;
};

class Mast3rEngine {
 public:
  static Result<std::unique_ptr<Mast3rEngine>> load(Runtime& rt, const std::string& weights_path, Precision precision);

  // Builds (records) the encoder and pair graphs infer() uses for a shape and runs them once on
  // synthetic images. A batch-1 shape with both views of one size also builds what infer_batch,
  // encode_images and infer_encoded use at that size (with the batch options of the time): the pair
  // graphs of pair_batch pairs (with and without view 2's points) and the encoder graphs of 1 to
  // encode_chunk images.
  Status warmup(const ForwardShape& shape);
  // view1[i] and view2[i] form pair i; all view1 images share one size, all view2 images another.
  Result<Mast3rResult> infer(std::span<const ImageU8View> view1, std::span<const ImageU8View> view2);

  // Many pairs over a set of images (any sizes), one result per pair in the order asked; each result
  // equals infer() on that pair. Each distinct image (views with the same source count as one) is
  // encoded once, in chunks of batch_options().encode_chunk images of one size; pairs of one shape
  // run their decoder and heads pair_batch at a time (consecutive pairs in run order; a shorter
  // tail runs pair by pair, so each shape has at most two pair graphs), and the encoder of the next
  // chunk overlaps the decoder and heads of the current pairs. Graphs of a new batch size are
  // recorded on first use. A result's stage_ms gives its pair's own
  // decoder/head/postprocess times and an equal share of its images' preprocess/encoder time (so
  // the results' gpu_ms add up to the batch's GPU time); wall_ms is from the call's start until the
  // host saw the pair finish.
  Result<std::vector<Mast3rResult>> infer_batch(std::span<const ImageU8View> images, std::span<const ImagePair> pairs);

  // Encodes `images` (any sizes, runs of batch_options().encode_chunk images of one size) for
  // infer_encoded, which then runs no encoder.
  Result<EncodedImages> encode_images(std::span<const ImageU8View> images);
  // infer_batch over images already encoded: pairs index `encoded`'s images. A result's stage_ms
  // has its pair's own times only (encode_images ran the encoder).
  Result<std::vector<Mast3rResult>> infer_encoded(const EncodedImages& encoded, std::span<const ImagePair> pairs,
                                                  const EncodedPairOptions& options = {});

  // Encoder output (after enc_norm) of images of one size: [B, N_tokens, enc_embed_dim] in the
  // trunk dtype (fp32, or fp16 in the fp16 precisions), in a tensor of the caller's own.
  Result<Tensor> encode(std::span<const ImageU8View> images);

  void set_batch_options(const Mast3rBatchOptions& options);
  Mast3rBatchOptions batch_options() const;

  const Mast3rWeights& weights() const { return *weights_; }
  const Mast3rConfig& config() const { return weights_->config(); }
  // Images run through the encoder since load (each infer_batch image counts once).
  uint64_t images_encoded() const;
  // Intermediate of the most recent run at `shape` (tests, debugging); null if unknown.
  const Tensor* tap(const ForwardShape& shape, const std::string& name) const;

 private:
  Mast3rEngine(Runtime& rt) : rt_(rt) {}
  Result<Mast3rForward*> forward_for(const ForwardShape& shape);
  Result<Mast3rEncoder*> encoder_for(int64_t batch, ViewSize size);
  Result<Mast3rResult> infer_locked(std::span<const ImageU8View> view1, std::span<const ImageU8View> view2);
  // Where each image's bytes are for the encoder's input copies: device sources as they are, host
  // images packed into `staging`, mapped host-visible memory the GPU copies from in the encoder's
  // own submission (no separate upload and wait). `staging` must live until that run completes.
  Result<std::vector<ImageSource>> place_images(std::span<const ImageU8View> images, PoolBuffer& staging);
  // A pair to run: its shape (batch 1), its two views' tokens and the last encoder run it reads.
  struct PlannedPair {
    ForwardShape shape;
    std::array<TokenRow, 2> rows;
    int ready_after = 0;
  };
  // The pair steps for `planned` taken in `order`: runs of pair_batch consecutive pairs of one
  // shape form one batched step; a shorter run goes pair by pair (two pair graphs per shape at
  // most). `members[s]` lists step s's pairs (indices into `planned`) by row.
  struct PairSteps {
    std::vector<PairStep> steps;
    std::vector<std::vector<size_t>> members;
  };
  Result<PairSteps> pair_steps(std::span<const PlannedPair> planned, std::span<const size_t> order);
  // One result per planned pair from the run steps; `encoder_share(k, stage_ms)` adds pair k's share
  // of the encoder's time (before its own step's).
  Result<std::vector<Mast3rResult>> pair_results(
      const PairSteps& steps, std::span<const PlannedPair> planned, double span_ms,
      const std::function<void(size_t k, StageTimes& stage_ms)>& encoder_share);
  Result<std::vector<EncodeStep>> encode_steps(std::span<const std::vector<int>> chunks,
                                               std::span<const ViewSize> sizes);
  // Runs the steps (Mast3rBatchRunner); returns the GPU span from first copy in to the last graph's end.
  Result<double> run(std::span<const ImageSource> images, std::vector<EncodeStep>& encodes,
                     std::vector<PairStep>& pairs);

  struct ShapeLess {
    bool operator()(const ForwardShape& a, const ForwardShape& b) const;
  };

  Runtime& rt_;
  std::unique_ptr<Mast3rWeights> weights_;
  mutable std::mutex mutex_;  // serialises graph builds and runs; guards everything below
  std::map<ForwardShape, std::unique_ptr<Mast3rForward>, ShapeLess> forwards_;
  std::map<std::pair<int64_t, ViewSize>, std::unique_ptr<Mast3rEncoder>> encoders_;  // by (batch, size)
  std::map<ForwardShape, std::array<Tensor, 2>, ShapeLess> input_taps_;              // of infer()'s last run
  uint64_t images_encoded_ = 0;
  Mast3rBatchOptions batch_options_;
};

}  // namespace recon::gpu
