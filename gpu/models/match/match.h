// Descriptor matching on the GPU for MASt3R's local features (docs/MATCHING.md):
//  - the official fast reciprocal nearest neighbours (mast3r/fast_nn.py, spec §7): seeds on a grid
//    of A walk A→B→A by nearest neighbour until the walk stops moving, for at most max_iter
//    iterations; converged seeds are mutual nearest neighbours, merged (unique, sorted by the A then
//    the B pixel index) and border-filtered as the official demo does;
//  - an exhaustive matcher: every pixel of A (or a subsample) gets its top-k neighbours in B,
//    optionally only mutual ones and above a confidence threshold.
// Nearest neighbour = the largest dot product over every pixel of the other map, ties to the lowest
// pixel index (torch.max). The brute-force search is one fused kernel (shaders/match_nn.comp, or
// shaders/match_nn_cm.comp on tensor cores) that streams the database through shared memory; the
// similarity matrix is never materialised. The fast matcher's whole loop is one recorded graph,
// one submission: the max_iter iterations are recorded, and converged seeds drop out of the
// device-side active lists, so later steps cost only what is still moving.
//
// Inputs are device tensors: descriptor maps f32 [H, W, D] or [1, H, W, D] (L2-normalised by the
// model; D ≤ kMaxMatchDim), optional pts3d f32 [.., H, W, 3] and confidence f32 [.., H, W] maps.
// Results are device tensors with a fixed capacity and a device-side count, plus a host copy.
// Misuse (shapes, dtypes, options) returns INVALID_ARGUMENT; nothing here aborts on bad input.
//
// Limits: each map must fit one storage-buffer binding (maxStorageBufferRange, 128 MiB on
// lavapipe: 1.3 Mpx at D = 24); pixel counts below 2^31.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/graph.h"
#include "gpu/runtime.h"
#include "gpu/status.h"
#include "gpu/tensor.h"

namespace recon::gpu {

inline constexpr int64_t kMaxMatchDim = 64;
inline constexpr int kMaxMatchTopK = 8;
inline constexpr int kMaxFastMatchIter = 31;

// Per-pixel maps gathered for every match; leave a tensor undefined to skip it. pts3d_a and
// pts3d_b go together, so do conf_a and conf_b.
struct MatchMaps {
  Tensor pts3d_a, pts3d_b;  // f32 [H, W, 3] or [1, H, W, 3], the size of that side's descriptors
  Tensor conf_a, conf_b;    // f32 [H, W] or [1, H, W], e.g. desc_conf
};

// Knobs of the brute-force kernel; 0 = chosen from the device. For benchmarks and tests. Defaults on
// a GPU: 256 invocations × 4 queries at D ≤ 24, grid 1024, pair and fixed on (best of a sweep on an
// H200, docs/MATCHING.md); on a CPU device (lavapipe): grid 16, pair and fixed off.
struct MatchTuning {
  int grid = 0;                // workgroups of each NN dispatch (persistent loop over the jobs)
  int queries_per_thread = 0;  // 1..8
  int batch = 0;               // exhaustive: queries per NN dispatch (0: as many as 64 MiB of partials allow)
  int pair = 0;                // database pixels scored per loop turn: 1, 2, 4 or 8 (0: 4 on a GPU, 1 on a CPU)
  int fixed = 0;               // compile-time variant at D = 24, 4 or 8 queries, K = 1: 0 default, 1 off, 2 on
  int workgroup = 0;           // NN workgroup size: 64, 128 or 256 (0: 256)
  // Fast matcher only:
  int tail_grid = 0;    // NN workgroups from iteration 2 on (counts unknown, often small; 0: grid)
  int update_grid = 0;  // match_update workgroups (one seed each, persistent; 0: 2048 on a GPU, 16 on a CPU)
  int dedup = 0;        // search each distinct query pixel of a step once: 0 default (on), 1 off, 2 on
  // Nearest-neighbour search (K = 1) on tensor cores (shaders/match_nn_cm.comp; NV cooperative
  // matrices, D = 8, 16, 24 or 32, descriptor values within fp16's range): 0 default (on
  // where the device has them, with split products), 1 off, 2 split products (fp32-accurate scores),
  // 3 fp16-rounded descriptors. Scores differ from the FMA path's in rounding only. On this path
  // queries_per_thread (1, 2) is the 16-row query blocks of a subgroup and workgroup its size.
  int tensor = 0;
  static constexpr int kTensorFp16 = 3;  // `tensor` for descriptors that came from fp16 heads

  bool operator==(const MatchTuning&) const = default;
};

struct FastMatchOptions {
  int subsample = 8;  // seeds at x = S/2, S/2 + S, ... < W and the same for y (the official S)
  int max_iter = 10;  // 1..kMaxFastMatchIter A→B→A iterations; seeds still moving are dropped
  int border = 3;     // keep border ≤ x < W − border and border ≤ y < H − border in both; 0: all
  MatchTuning tuning;
};

struct ExhaustiveMatchOptions {
  int top_k = 1;                      // neighbours in B per query, 1..kMaxMatchTopK
  bool reciprocal = true;             // keep (a, b) only when a is also among b's top_k neighbours in A
  float confidence_threshold = 0;     // > 0: keep sqrt(conf_a · conf_b) ≥ threshold (needs conf maps)
  int subsample = 1;                  // queries: the grid S/2 + i·S of A (1: every pixel) ...
  std::vector<int32_t> query_pixels;  // ... or these A pixel indices (y·W + x), if not empty
  int border = 3;                     // as in FastMatchOptions
  MatchTuning tuning;
};

// The sizes a matcher is built for.
struct MatchShape {
  int64_t h_a = 0, w_a = 0, h_b = 0, w_b = 0, dim = 0;
  bool pts3d = false;  // MatchMaps::pts3d_* will be given
  bool conf = false;   // MatchMaps::conf_* will be given
  // The shape of these inputs (descriptor maps and which maps are present); validates them.
  static Result<MatchShape> of(const Tensor& desc_a, const Tensor& desc_b, const MatchMaps& maps = {});
  bool operator==(const MatchShape&) const = default;
};

// Host copy of a result's first `count` matches.
struct HostMatches {
  std::vector<int32_t> idx_a, idx_b;        // pixel indices y·W + x
  std::vector<int32_t> xy_a, xy_b;          // (x, y) per match
  std::vector<float> score;                 // <desc_a[idx_a], desc_b[idx_b]>
  std::vector<float> pts3d_a, pts3d_b;      // 3 per match, when pts3d maps were given
  std::vector<float> conf_a, conf_b, conf;  // when conf maps were given; conf = sqrt(conf_a·conf_b)
  // Fast matcher: seeds entering step 0 (iteration 1, A→B), step 1 (B→A), 2, ...; the last entry
  // counts the seeds still moving after max_iter iterations (dropped). Empty for exhaustive.
  std::vector<int32_t> active_per_step;
  // Fast matcher: the nearest-neighbour searches each step ran (distinct query pixels with the
  // de-duplication, else the active seeds); 2·max_iter entries. Empty for exhaustive.
  std::vector<int32_t> queries_per_step;
  size_t size() const { return idx_a.size(); }
};

// Device-side results. Rows [0, count) are valid; rows past it hold stale data.
struct MatchResult {
  int64_t capacity = 0;
  Tensor count;                 // i32 [1]
  Tensor idx_a, idx_b;          // i32 [capacity]
  Tensor xy_a, xy_b;            // i32 [capacity, 2] (x, y)
  Tensor score;                 // f32 [capacity]
  Tensor pts3d_a, pts3d_b;      // f32 [capacity, 3], defined when pts3d maps were given
  Tensor conf_a, conf_b, conf;  // f32 [capacity], defined when conf maps were given
  Tensor state;                 // i32 [192]; fast matcher: [0, steps) are active_per_step
  int steps = 0;                // 2·max_iter + 1 for the fast matcher, 0 otherwise
  bool dedup = false;           // fast matcher: state[128, 128 + steps − 1) are queries_per_step

  // Downloads the count, then the valid rows of every defined tensor.
  Result<HostMatches> to_host(Runtime& rt) const;
};

// The fast reciprocal matcher for one shape, as a recorded graph replayed by run(). The output
// tensors belong to the matcher and are overwritten by the next run; copy what you keep.
// Not thread-safe: one run at a time.
class FastMatcher {
 public:
  static Result<std::unique_ptr<FastMatcher>> create(Runtime& rt, const MatchShape& shape,
                                                     const FastMatchOptions& options = {});
  ~FastMatcher();

  // Binds the inputs (shapes as in `shape()`), submits to `queue` (null: the compute queue),
  // waits; returns the output tensors.
  Result<MatchResult> run(const Tensor& desc_a, const Tensor& desc_b, const MatchMaps& maps = {},
                          Queue* queue = nullptr);
  // The same, split: submit() returns the timeline value that wait() takes.
  Result<uint64_t> submit(const Tensor& desc_a, const Tensor& desc_b, const MatchMaps& maps = {},
                          Queue* queue = nullptr);
  Status wait(uint64_t value);

  const MatchShape& shape() const { return shape_; }
  const FastMatchOptions& options() const { return options_; }
  int64_t seed_count() const { return seeds_; }
  const MatchResult& result() const { return result_; }
  Graph& graph() { return *graph_; }
  // GPU milliseconds of the last completed run by phase ("seeds", "iter1a" and "iter1b" (the two
  // full searches of iteration 1), "iter2" … "iter<max_iter>", "merge"); empty when the device
  // has no timestamps.
  std::vector<std::pair<std::string, double>> phase_ms() { return graph_->timings(); }

 private:
  FastMatcher(Runtime& rt, const MatchShape& shape, const FastMatchOptions& options);
  Status build();
  Status bind(const Tensor& desc_a, const Tensor& desc_b, const MatchMaps& maps);

  Runtime& rt_;
  MatchShape shape_;
  FastMatchOptions options_;
  int64_t seeds_ = 0;
  std::unique_ptr<Graph> graph_;
  std::vector<Tensor> keep_;  // scratch tensors the recorded graph uses
  MatchResult result_;
};

// All-pairs matching: top_k neighbours of every query pixel of A in B, optionally reciprocal and
// confidence-filtered, as one recorded graph. Matches are sorted by the A pixel, then the B pixel.
// Same ownership rules as FastMatcher.
class ExhaustiveMatcher {
 public:
  static Result<std::unique_ptr<ExhaustiveMatcher>> create(Runtime& rt, const MatchShape& shape,
                                                           const ExhaustiveMatchOptions& options = {});
  ~ExhaustiveMatcher();

  Result<MatchResult> run(const Tensor& desc_a, const Tensor& desc_b, const MatchMaps& maps = {});

  const MatchShape& shape() const { return shape_; }
  int64_t query_count() const { return queries_; }
  const MatchResult& result() const { return result_; }
  Graph& graph() { return *graph_; }

 private:
  ExhaustiveMatcher(Runtime& rt, const MatchShape& shape, const ExhaustiveMatchOptions& options);
  Status build(const std::vector<int32_t>& query_pixels);
  Status bind(const Tensor& desc_a, const Tensor& desc_b, const MatchMaps& maps);

  Runtime& rt_;
  MatchShape shape_;
  ExhaustiveMatchOptions options_;
  int64_t queries_ = 0;
  std::unique_ptr<Graph> graph_;
  std::vector<Tensor> keep_;
  MatchResult result_;
};

// One-shot forms: build a matcher for these inputs, run it once, return its (now caller-owned)
// output tensors. Building records the graph each time; keep a matcher to match many pairs.
Result<MatchResult> match_fast_reciprocal(Runtime& rt, const Tensor& desc_a, const Tensor& desc_b,
                                          const FastMatchOptions& options = {}, const MatchMaps& maps = {});
Result<MatchResult> match_exhaustive(Runtime& rt, const Tensor& desc_a, const Tensor& desc_b,
                                     const ExhaustiveMatchOptions& options = {}, const MatchMaps& maps = {});

// The seed pixels (y·W + x, sorted) of the grid S/2 + i·S on an h × w map; empty if none fit.
std::vector<int32_t> match_seed_grid(int64_t h, int64_t w, int subsample);

}  // namespace recon::gpu
