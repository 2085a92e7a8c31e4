// The focal length of a camera-frame pointmap: dust3r's estimate_focal_knowing_depth in its
// 'weiszfeld' mode (dust3r/post_process.py), which MASt3R-SfM uses for its initial focals.
#pragma once

#include <span>

namespace recon::gpu {

// `pts3d` is H*W*3 (row-major [y][x][xyz]) in the camera frame; (ppx, ppy) the principal point in
// pixels (pixel centres at integer coordinates; the official uses (W/2, H/2)). Every pixel counts,
// unweighted: f minimises sum ||(x - ppx, y - ppy) - f (X/Z, Y/Z)|| (X/Z or Y/Z non-finite -> 0),
// from the least-squares start and `iterations` re-weighted steps (weights 1/max(distance, 1e-8)).
// The result is clipped to [min_factor, max_factor] * max(H, W) / (2 tan 30 deg). Where the
// estimate is undefined (every point on the optical axis, so 0/0), max(H, W) / (2 tan 30 deg) is
// returned; the official would return NaN.
double estimate_focal_weiszfeld(std::span<const double> pts3d, int height, int width, double ppx, double ppy,
                                double min_factor = 0.5, double max_factor = 3.5, int iterations = 10);

}  // namespace recon::gpu
