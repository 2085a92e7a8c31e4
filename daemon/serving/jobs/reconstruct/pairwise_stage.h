// The pairwise stage of a reconstruction, on one device: every unordered pair {a, b} runs the
// network both ways, (a, b) and (b, a) (the official symmetric_inference), over images encoded once
// for the whole job, then the official correspondence extraction (mast3r/cloud_opt/sparse_ga.py
// extract_correspondences): the fast reciprocal matcher on both descriptor pairs, each in both
// directions, merged with the first occurrence of a pixel pair winning. Only what the alignment
// needs leaves the device: the merged matches and each image's own-frame prediction (pts3d and conf
// of view 1 of each direction). The job runs it in steps: a step's network on the compute queue
// while the step before it is matched beside it on the second compute queue (the matcher's scalar
// searches fill what the network's tensor-core kernels leave of the GPU, and each run's host round
// trips no longer leave the GPU idle; on a device with one compute queue the matching runs after the
// network instead). Worker thread, and the thread it starts for the matching.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "daemon/serving/jobs/reconstruct/pair_graph.h"
#include "gpu/models/mast3r/mast3r_engine.h"
#include "gpu/models/match/match.h"
#include "gpu/reconstruct/sparse_alignment.h"
#include "gpu/status.h"

namespace recon::daemon {

class MatchInstance;

// An image's points in its own camera frame (row-major [H, W, 3]) and their confidence [H, W].
struct OwnFramePrediction {
  uint32_t image = 0;
  std::vector<float> pts3d, conf;
};

struct PairwiseOutput {
  gpu::PairMatches matches;               // image_a < image_b
  std::array<OwnFramePrediction, 2> own;  // of image_a, then image_b
};

// One matcher run's matches as pixel indices (y·W + x) in image a and b, and their confidence.
struct IndexMatches {
  std::vector<int32_t> idx_a, idx_b;
  std::vector<float> conf;
};

// The official merge: the runs' matches concatenated in order, unique by (pixel in a, pixel in b),
// the first occurrence's confidence kept; sorted by (pixel in a, pixel in b) as np.unique leaves
// them. Pixel indices become (x, y) with the images' widths.
gpu::PairMatches merge_matches(std::span<const IndexMatches> runs, int image_a, int image_b, int width_a, int width_b);

// Where the stage's wall time went, summed over its calls (the job reports it when the stage ends).
// A step's matching and copies run beside the next step's network, so they overlap it.
struct PairwiseTimes {
  double network_ms = 0;   // the engine's decoder and heads
  double matching_ms = 0;  // the four matcher runs per pair, their matches downloaded and merged
  double copies_ms = 0;    // the own-frame predictions downloaded
  double waited_ms = 0;    // the network's thread waiting for matching and copies after its own work
};

// One step's network outputs, not yet matched: each pair's two directions on the device.
struct PairwiseNetwork {
  std::vector<ImagePairIndex> pairs;       // unordered, first < second
  std::vector<gpu::Mast3rResult> results;  // (a, b) for every pair, then (b, a)
  // The descriptors came from fp16 heads: the matcher then searches them at fp16 precision too
  // (MatchTuning::tensor 3 where the device has tensor cores), as PyTorch's autocast matcher does.
  bool fp16_descriptors = false;
};

// The network of `pairs` (unordered, first < second) both ways over `images` (encoded by
// `engine`), on the compute queue; adds its time to `times`.
Result<PairwiseNetwork> run_pair_network(gpu::Mast3rEngine& engine, const gpu::EncodedImages& images,
                                         std::span<const ImagePairIndex> pairs, PairwiseTimes& times);

// `network`'s own-frame predictions downloaded and its pairs matched, one output per pair in
// order (`image_widths` of every image), with every submission on `queue`: the second compute queue, so that the next
// step's network runs on the compute queue meanwhile (from another thread; `matcher` is then this call's alone).
// `subsample` is the matcher's seed grid (the alignment's subsample).
Result<std::vector<PairwiseOutput>> match_pair_network(const PairwiseNetwork& network, MatchInstance& matcher,
                                                       gpu::Runtime& rt, gpu::Queue& queue,
                                                       std::span<const int> image_widths, int subsample,
                                                       PairwiseTimes& times);

}  // namespace recon::daemon
