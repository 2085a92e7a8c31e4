// The pair side of the MASt3R forward for a fixed (batch, view sizes), as two recorded graphs:
// graph() takes the two views' encoder tokens (Mast3rEncoder's output, copied into enc_in(v) before
// each run) through the decoder and both heads; output_graph(), run after it on the same queue,
// applies the output activations and writes the eight outputs (spec §5.3) straight into the
// caller's tensors, bound to its slots per run (bind_outputs): each result gets its own tensors
// without a copy, and a new set of tensors re-records only those two dispatches. Every intermediate
// is in pooled device memory owned here. Built once per shape and replayed.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpu/graph.h"
#include "gpu/models/mast3r/mast3r_encoder.h"
#include "gpu/models/mast3r/mast3r_weights.h"
#include "gpu/runtime.h"

namespace recon::gpu {

struct ForwardShape {
  int64_t batch = 1;
  ViewSize view1, view2;
  // Whether the graph runs view 2's DPT head, which makes pts3d_2 and conf_2. Without it the graph
  // gives view 2's descriptors only: what a reconstruction reads of view 2, whose points it takes
  // from the pair in the other direction. The DPT is about a fifth of a pair's decoder and heads.
  bool view2_points = true;
  bool operator==(const ForwardShape&) const = default;
  std::string to_string() const;
};

// The eight outputs, by view (index 0 = view 1). pts3d[1] and conf[1] are undefined where the
// graph ran without view 2's points (ForwardShape::view2_points).
struct Mast3rOutputs {
  std::array<Tensor, 2> pts3d;      // [B, H, W, 3]
  std::array<Tensor, 2> conf;       // [B, H, W]
  std::array<Tensor, 2> desc;       // [B, H, W, D]
  std::array<Tensor, 2> desc_conf;  // [B, H, W]

  // The outputs' public names, and the tensors in that order.
  static constexpr std::array<const char*, 8> kNames = {"pts3d_1", "pts3d_2", "conf_1",      "conf_2",
                                                        "desc_1",  "desc_2",  "desc_conf_1", "desc_conf_2"};
  std::array<const Tensor*, 8> list() const {
    return {&pts3d[0], &pts3d[1], &conf[0], &conf[1], &desc[0], &desc[1], &desc_conf[0], &desc_conf[1]};
  }
  std::array<Tensor*, 8> list() {
    return {&pts3d[0], &pts3d[1], &conf[0], &conf[1], &desc[0], &desc[1], &desc_conf[0], &desc_conf[1]};
  }
};

class Mast3rForward {
 public:
  static Result<std::unique_ptr<Mast3rForward>> build(Runtime& rt, const Mast3rWeights& weights,
                                                      const ForwardShape& shape);

  const ForwardShape& shape() const { return shape_; }
  Graph& graph() { return *graph_; }
  Graph& output_graph() { return *output_graph_; }
  // [B, N_v, enc_embed_dim] encoder tokens of view v (0 or 1) in the trunk dtype, written before each run.
  const Tensor& enc_in(int view) const { return views_[view].enc_in; }
  // Output i's dtype and shape (Mast3rOutputs::kNames order); none for an output the graph does
  // not make (view 2's points where shape().view2_points is false).
  const std::optional<Arg>& output_slot(size_t i) const { return output_slots_.at(i); }
  // Binds the tensors output_graph()'s next run writes (each of its output slots' dtype and shape;
  // those without a slot are not read). The graph keeps them referenced until the next bind.
  Status bind_outputs(const Mast3rOutputs& targets);
  // Intermediate tensors by tap name (as tests/reference names them), for debugging and tests.
  const Tensor* tap(const std::string& name) const;
  size_t activation_bytes() const { return activation_bytes_; }

 private:
  Mast3rForward(Runtime& rt, const Mast3rWeights& w, const ForwardShape& s);
  Result<Tensor> alloc(DType dtype, const Shape& shape, const std::string& tap_name = "");
  // `t` itself when it already has `dtype`, else a converted copy (one cast dispatch).
  Result<Tensor> as_dtype(const Tensor& t, DType dtype);
  Status build_all();
  Status build_decoder();
  Status build_heads(int view);
  Status build_dpt(int view, std::span<const Tensor* const, 4> head_tokens);
  Status build_local_features(int view, const Tensor& enc, const Tensor& dec_final);
  void add_output_slots();
  Status build_postprocess(int view);

  Runtime& rt_;
  const Mast3rWeights& w_;
  ForwardShape shape_;
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<Graph> output_graph_;
  std::array<std::optional<Arg>, 8> output_slots_;  // output_graph_'s slots, in Mast3rOutputs::kNames order
  std::vector<std::pair<std::string, Tensor>> taps_;
  std::vector<Tensor> keep_;  // every intermediate, alive as long as the recorded graph
  size_t activation_bytes_ = 0;

  // Per-view state shared between the build stages.
  struct View {
    int64_t h = 0, w = 0, n = 0;  // token grid
    Tensor enc_in;                // [B, N, enc_dim], trunk dtype
    std::vector<Tensor> dec;      // dec[l], l = 0..L: decoder_embed output, then each layer's output
    Tensor dec_final;             // dec_norm(dec[L])
    Tensor dpt_raw;               // [B, 4, H, W], head dtype; undefined without the view's points
    Tensor local_tokens;          // [B, N, (D+1)·p²], head dtype: the local-feature MLP's output
  };
  std::array<View, 2> views_;
};

}  // namespace recon::gpu
