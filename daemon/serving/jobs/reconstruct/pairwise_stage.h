// The pairwise stage of a reconstruction, on one device: every unordered pair {a, b} runs the
// network both ways, (a, b) and (b, a) (the official symmetric_inference), over images encoded once
// for the whole job, then the official correspondence extraction (mast3r/cloud_opt/sparse_ga.py
// extract_correspondences): the fast reciprocal matcher on both descriptor pairs, each in both
// directions, merged with the first occurrence of a pixel pair winning. Only what the alignment
// needs leaves the device: the merged matches and each image's own-frame prediction (pts3d and conf
// of view 1 of each direction). Worker thread only.
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
struct PairwiseTimes {
  double network_ms = 0;   // the engine's decoder and heads
  double matching_ms = 0;  // the four matcher runs per pair, their matches downloaded and merged
  double copies_ms = 0;    // the own-frame predictions downloaded
};

// Runs `pairs` (unordered, first < second) over `images` (encoded by `engine`) and returns one
// output per pair, in order, adding its times to `times`. `subsample` is the matcher's seed grid
// (the alignment's subsample).
Result<std::vector<PairwiseOutput>> run_pairwise(gpu::Mast3rEngine& engine, MatchInstance& matcher, gpu::Runtime& rt,
                                                 const gpu::EncodedImages& images,
                                                 std::span<const ImagePairIndex> pairs, int subsample,
                                                 PairwiseTimes& times);

}  // namespace recon::daemon
