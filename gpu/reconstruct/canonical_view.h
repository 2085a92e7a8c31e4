// Canonical views of MASt3R-SfM (sparse_ga.py canonical_view, 'avg-angle' mode): one image's
// own-frame pointmaps, streamed in one at a time as the pairs finish, become its confidence-weighted
// mean pointmap, the relative depth map that ties every pixel to the anchor of its s x s block, the
// output confidence and the Weiszfeld focal. Memory is O(H*W) per image whatever the number of
// neighbours: only running sums are kept, never the predictions themselves.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "gpu/reconstruct/worker_pool.h"
#include "gpu/status.h"

namespace recon::gpu {

struct CanonicalView {
  int height = 0, width = 0, subsample = 0;
  int predictions = 0;               // how many own-frame predictions were averaged
  std::vector<double> canon2;        // H*W relative depth: pixel z / anchor z, 1 at the anchors
  std::vector<double> conf;          // H*W, sum w^2 / sum w with w = C - 0.999
  std::vector<double> anchor_depth;  // (H/s)*(W/s) row-major: z of the mean pointmap at the anchors
  double focal = 0;                  // Weiszfeld estimate with principal point (W/2, H/2), pixels

  int anchors_x() const { return subsample > 0 ? width / subsample : 0; }
  int anchors_y() const { return subsample > 0 ? height / subsample : 0; }
};

// Accumulates one image's own-frame predictions. Anchors sit at (s/2 + s*X, s/2 + s*Y); H and W
// must be multiples of s. For n predictions X_p (points), C_p (confidence), w_p = C_p - 0.999:
//   canon  = sum w X / sum w,  conf = sum w^2 / sum w,
//   canon2 = 1 + mean_p(r_p) tan(sum_p w_p atan((z_p - za_p) / r_p) / sum w) / canon_z(anchor)
// where za_p = max(X_p(anchor).z, FLT_EPSILON) and r_p = max(|X_p.xy - X_p(anchor).xy|, 1e-8): the
// block's slope angles are averaged, not its depths, so predictions at different scales agree.
//
// A prediction with the wrong size, a non-finite value or a confidence <= 0.999 (weight <= 0) is
// refused: it is not added, and finish() reports the first such refusal (INVALID_ARGUMENT), so a
// streaming caller checks once at the end.
class CanonicalViewBuilder {
 public:
  static constexpr long long kMaxPixels = 1LL << 26;

  CanonicalViewBuilder(int height, int width, int subsample);

  // `pts3d` is H*W*3 own-frame points, row-major [y][x][xyz]; `conf` is H*W.
  void add(std::span<const float> pts3d, std::span<const float> conf);
  void add(std::span<const double> pts3d, std::span<const double> conf);

  // The canonical view of everything added so far (the builder stays usable).
  Result<CanonicalView> finish() const;
  // sum w X / sum w, H*W*3 (finish() needs it for the focal; tests read it).
  std::vector<double> mean_points() const;

  int height() const { return height_; }
  int width() const { return width_; }
  int subsample() const { return subsample_; }
  int predictions() const { return count_; }
  const Status& status() const { return status_; }

 private:
  template <typename T>
  void add_impl(std::span<const T> pts3d, std::span<const T> conf);

  int height_, width_, subsample_;
  int count_ = 0;
  int refused_ = 0;
  Status status_;  // the first problem: a bad shape at construction or a refused prediction
  // Running sums per pixel.
  std::vector<double> sum_wx_;       // 3 per pixel: sum w X
  std::vector<double> sum_w_;        // sum w
  std::vector<double> sum_w2_;       // sum w^2
  std::vector<double> sum_w_angle_;  // sum w atan((z - za) / r)
  std::vector<double> sum_radius_;   // sum r
};

// One own-frame prediction of image `image`, for add_predictions (the maps as add() takes them).
struct OwnFrameMaps {
  std::size_t image = 0;
  std::span<const float> pts3d, conf;
};

// Adds every prediction to builders[prediction.image], each image's in the order given, images on
// `pool`'s workers at once: the same sums as adding them one by one. An image index outside
// `builders` is a caller's bug: INVALID_ARGUMENT, nothing added.
Status add_predictions(std::span<CanonicalViewBuilder> builders, std::span<const OwnFrameMaps> predictions,
                       sga::WorkerPool& pool);

// Every builder's finish(), images on `pool`'s workers at once; the first failing image's error,
// with its index.
Result<std::vector<CanonicalView>> finish_canonical_views(std::span<const CanonicalViewBuilder> builders,
                                                          sga::WorkerPool& pool);

}  // namespace recon::gpu
