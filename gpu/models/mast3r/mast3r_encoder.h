// The image side of the MASt3R forward as its own recorded graph, for a fixed (batch, image size):
// uint8 RGB → the model's input normalisation → the encoder → the tokens the decoder reads. Encoder
// features depend only on the image (spec §6.3), so the engine runs this once per image and hands
// the tokens to the pair graphs (Mast3rForward). It must not know about pairs.
//
// Mast3rEncoder is what the engine sees; build() makes the one the weights' config names: MASt3R's
// CroCo ViT (patch embedding, RoPE blocks, enc_norm; in mast3r_encoder.cpp) or a DUNE ViT
// (dune_encoder.h). Both record into graph() at build and differ only in what they record.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/graph.h"
#include "gpu/models/mast3r/mast3r_weights.h"
#include "gpu/runtime.h"

namespace recon::gpu {

struct ViewSize {
  int64_t height = 0, width = 0;
  bool operator==(const ViewSize&) const = default;
  auto operator<=>(const ViewSize&) const = default;
};

class Mast3rEncoder {
 public:
  static Result<std::unique_ptr<Mast3rEncoder>> build(Runtime& rt, const Mast3rWeights& weights, int64_t batch,
                                                      ViewSize size);
  virtual ~Mast3rEncoder() = default;

  int64_t batch() const { return batch_; }
  ViewSize size() const { return size_; }
  int64_t tokens() const { return tokens_; }
  Graph& graph() { return *graph_; }
  // [B, H, W, 3] uint8 images, written before each run.
  const Tensor& input_u8() const { return input_u8_; }
  // [B, N, enc_embed_dim] patch tokens as the decoder reads them (after enc_norm, or DUNE's norm), in
  // the trunk dtype; overwritten by the next run.
  const Tensor& output() const { return output_; }
  // "input" ([B, 3, H, W] fp32, the encoder's normalised input) and "enc_out" (= output()).
  const Tensor* tap(const std::string& name) const;

 protected:
  Mast3rEncoder(Runtime& rt, const Mast3rWeights& w, int64_t batch, ViewSize size);
  Result<Tensor> alloc(DType dtype, const Shape& shape);
  // Records the preprocessing `shader` (push constants of mast3r_preprocess.comp) from input_u8_ into
  // the fp32 image_, and returns the image in the trunk dtype.
  Result<Tensor> build_input(const char* shader);
  // Records everything after input_u8_ and sets tokens_ and output_.
  virtual Status build_all() = 0;

  Runtime& rt_;
  const Mast3rWeights& w_;
  int64_t batch_;
  ViewSize size_;
  int64_t tokens_ = 0;
  std::unique_ptr<Graph> graph_;
  Tensor input_u8_, image_, output_;
  std::vector<Tensor> keep_;  // every intermediate, alive as long as the recorded graph
};

}  // namespace recon::gpu
