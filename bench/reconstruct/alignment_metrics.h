// Accuracy of an aligned scene against a case's ground truth, for recon_bench_ceres_alignment:
// camera errors after the best similarity (Umeyama on the centres, the chordal mean for the
// rotations; the alignment's frame and scale are its own), and which matches the true cameras call inliers (symmetric
// epipolar distance), so that reprojection errors can be summarised over the matches that are right.
#pragma once

#include <array>
#include <span>
#include <vector>

#include "gpu/reconstruct/match_losses.h"

namespace recon::bench {

struct PoseErrors {
  double rotation_deg_median = 0, rotation_deg_max = 0;
  double centre_pct_median = 0, centre_pct_max = 0;  // of the scene size: the true centres' bounding-box diagonal
  double focal_pct_median = 0, focal_pct_max = 0;
};

// Cam-to-world matrices are row-major 4x4, OpenCV axes; at least 3 cameras.
PoseErrors pose_errors(std::span<const std::array<double, 16>> estimated, std::span<const double> estimated_focal,
                       std::span<const std::array<double, 16>> truth, std::span<const double> true_focal);

// Per match (pair order, as MatchSet holds them): 1 when both pixels lie within `threshold_px` of the
// other's epipolar line under the true cameras (principal point (W/2, H/2), as make_alignment_case.py's).
// `images` maps the component's image indices to the case's.
std::vector<char> true_inliers(const gpu::sga::MatchSet& matches, std::span<const int> images,
                               std::span<const std::array<double, 16>> truth, std::span<const double> true_focal,
                               std::span<const int> width, std::span<const int> height, double threshold_px);

struct Summary {
  double median = 0, mean = 0;
  long long count = 0;
};

// Over the values whose mask entry (values.size() / mask.size() values per entry) is set; an empty
// mask takes every value.
Summary summarize(std::span<const double> values, std::span<const char> mask);

}  // namespace recon::bench
