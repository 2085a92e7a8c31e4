// Dense output of the sparse alignment (sparse_ga.py get_dense_pts3d, SGA:71-94): every pixel of every
// image placed in the world from its block's optimised anchor depth and the canonical relative depth,
// then dust3r's clean_pointcloud (BO:370-405) within each component: a point seen in front of another
// view's surface, with less confidence than that view's pixel, gets confidence 0.
#pragma once

#include <span>
#include <vector>

#include "gpu/reconstruct/canonical_view.h"
#include "gpu/reconstruct/sparse_alignment.h"

namespace recon::gpu {

struct DenseImage {
  std::vector<float> points;  // H*W*3 world points, row-major [y][x][xyz]
  std::vector<float> depth;   // H*W camera z-depth
  std::vector<float> conf;    // H*W canonical confidence, after cleaning
};

// `views` must be the ones `scene` was aligned from; if their number or sizes do not match the
// scene's cameras, the result is empty. Cleaning compares images of the same component only (the
// components' frames are unrelated). `threads` as AlignmentOptions::threads.
std::vector<DenseImage> dense_points(const SceneAlignment& scene, std::span<const CanonicalView> views,
                                     bool clean = true, int threads = 0);

}  // namespace recon::gpu
