// A sparse-alignment case file (make_alignment_case.py, or a golden file of
// tests/reference/sparse_ga_make_golden.py) read into memory, for the benches of this folder
// (recon_bench_alignment, the opt-in recon_bench_ceres_alignment): each image's own-frame predictions,
// the pairs' matches and, where the file has them, the true cameras. Reading only: no clock, no
// alignment.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "gpu/reconstruct/canonical_view.h"
#include "gpu/reconstruct/sparse_alignment.h"
#include "gpu/status.h"

namespace recon::bench {

// In the file's precision: float for make_alignment_case.py (the network's type), double for a golden file.
struct Prediction {
  std::vector<float> pts3d, conf;
  std::vector<double> pts3d_f64, conf_f64;
  void add_to(gpu::CanonicalViewBuilder& builder) const;
};

struct AlignmentCase {
  std::vector<int> height, width;
  std::vector<std::vector<Prediction>> own;  // per image
  std::vector<gpu::PairMatches> pairs;
  int subsample = 8;
  std::size_t predictions = 0, matches = 0;
  // Ground truth (make_alignment_case.py's gt.cam2w and gt.focal), empty where the file has none.
  std::vector<std::array<double, 16>> gt_cam_to_world;  // row-major, OpenCV axes
  std::vector<double> gt_focal;
};

Result<AlignmentCase> load_alignment_case(const std::string& path);

// Each image's predictions streamed into a CanonicalViewBuilder and finished, one image after another
// on the calling thread (as the daemon does).
Result<std::vector<gpu::CanonicalView>> canonical_views(const AlignmentCase& c);

}  // namespace recon::bench
