// MASt3R-SfM's sparse global alignment (mast3r/cloud_opt/sparse_ga.py; spec: docs/SPARSE_GA_REFERENCE.md
// §3-§8) on the CPU, in double precision: canonical views (canonical_view.h) and pairwise matches in,
// one camera per image out (intrinsics, cam-to-world pose, anchor depths), via the official kinematic
// tree, the coarse 3D-matching stage and the fine 2D-reprojection stage, with analytic gradients.
//
// Departures from the official code, all deliberate:
//  * double precision throughout (the official runs float32, its tree affinities included);
//  * each unordered pair's matches come once (the official lists both orders; the losses are equal);
//  * no DUSt3R fallback loss: a pair with no match, or whose best confidence is <= matching_conf_thr,
//    is left out of the losses, the tree and the connectivity;
//  * shared intrinsics are one focal and one principal point (the official aliases one tensor N times
//    in Adam, which makes its update implementation-dependent);
//  * a disconnected match graph is aligned per connected component (the official asserts);
//  * a NaN loss stops the stage before the step (the official steps, then stops), so the next stage
//    starts from finite parameters.
// It must not know about the network, files or the daemon: callers stream predictions in and read
// plain arrays out.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/reconstruct/canonical_view.h"
#include "gpu/reconstruct/kinematic_tree.h"
#include "gpu/status.h"

namespace recon::gpu {

// The matches of one unordered pair, given once. Pixels are integer (x, y), interleaved, at the
// canonical views' resolution; conf is the match confidence (sqrt(desc_conf_a desc_conf_b)).
struct PairMatches {
  int image_a = 0, image_b = 0;
  std::vector<std::int32_t> xy_a, xy_b;
  std::vector<float> conf;
};

struct AlignmentOptions {
  int subsample = 8;  // must equal every canonical view's
  double lr1 = 0.07;  // coarse stage: loss_3d with gamma 1.5
  int niter1 = 300;
  double lr2 = 0.01;  // fine stage: loss_2d with gamma 0.5
  int niter2 = 300;
  // kCoarse: stage 1 only; kRefine: stage 2 without the anchor depths; kRefineDepth: everything.
  enum class Level { kCoarse, kRefine, kRefineDepth } level = Level::kRefineDepth;
  bool shared_intrinsics = false;
  enum class Tree { kHclustWard, kMst } tree = Tree::kHclustWard;
  double matching_conf_thr = 0.0;  // pairs whose best match conf is not above this are left out (demo: 0)
  int threads = 0;                 // worker threads; 0 = hardware concurrency
};

struct AlignedCamera {
  std::array<double, 16> cam_to_world{};  // row-major, OpenCV axes (x right, y down, z forward)
  double focal = 0, cx = 0, cy = 0;       // pixels; pixel centres at integer coordinates
  int width = 0, height = 0;
};

struct ComponentAlignment {
  std::vector<int> images;                     // ascending image indices
  KinematicTree tree;                          // image indices; no edges for a single image
  std::vector<double> coarse_loss, fine_loss;  // per iteration
  double reprojection_px = 0;                  // conf-weighted mean reprojection error at the end, both directions
  int pairs = 0, matches = 0;
  std::vector<std::string> warnings;  // e.g. a stage stopped by a NaN loss
};

struct SceneAlignment {
  std::vector<AlignedCamera> cameras;             // one per image
  std::vector<std::vector<double>> anchor_depth;  // per image (H/s)*(W/s) z-depths in the world's scale
  std::vector<int> component;                     // per image; 0 = the largest component
  std::vector<ComponentAlignment> components;     // by component id
  std::vector<double> coarse_loss, fine_loss;     // of component 0
  double fine_reprojection_px = 0;                // over every aligned component's matches
  std::vector<int> skipped_pairs;                 // indices into `pairs`: no match, or below the threshold
};

// (stage "align-coarse" / "align-fine", iteration 1..total, total, loss) -> false cancels (CANCELLED).
using AlignmentProgress = std::function<bool(std::string_view, int, int, double)>;

// Aligns every connected component of the match graph with >= 2 images in its own frame; a single
// image keeps the identity pose, its canonical focal and principal point (W/2, H/2). Images may differ
// in size. Errors: INVALID_ARGUMENT (fewer than 2 images, inconsistent views or matches, a pair naming
// an unknown image or itself, a match outside its image, non-finite values, a non-positive median
// anchor depth), CANCELLED.
Result<SceneAlignment> align_scene(std::span<const CanonicalView> views, std::span<const PairMatches> pairs,
                                   const AlignmentOptions& options, const AlignmentProgress& progress = {});

}  // namespace recon::gpu
