// What a reconstruction answers: its tensors, computed on the host from the alignment and the
// dense points, then stored on the device behind the job's result handle. Names and layouts
// (N images, image i of H_i × W_i pixels at model resolution, M points):
//   cam_to_world   f32 [N, 4, 4]   camera-to-world, OpenCV axes (x right, y down, z forward)
//   intrinsics     f32 [N, 3, 3]   pinhole K in model-resolution pixels, pixel centres at integer
//                                  coordinates (add 0.5 to cx, cy for COLMAP's convention)
//   image_hw       i32 [N, 2]      H_i, W_i
//   component      i32 [N]         connected component of the match graph (0 = the largest);
//                                  each component has its own world frame
//   depth          f32 [Σ H_i·W_i] z-depth per pixel, image after image, rows of W_i
//   depth_conf     f32 [Σ H_i·W_i] its confidence (0 where cleaning found it occluded)
//   points         f32 [M, 3]      world points with confidence > min_conf, image after image
//   point_pixels   i32 [M, 3]      (image, x, y) each point comes from
//   point_conf     f32 [M]
//   pair_matches   i32 [P, 3]      (image a, image b, matches) per pair of the graph
//   loss           f32 [L]         the alignment's loss per iteration, coarse then fine
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "daemon/serving/result_store.h"
#include "gpu/reconstruct/dense_points.h"
#include "gpu/reconstruct/sparse_alignment.h"
#include "gpu/runtime.h"
#include "gpu/status.h"

namespace recon::daemon {

struct ReconstructArrays {
  std::vector<float> cam_to_world, intrinsics;
  std::vector<int32_t> image_hw, component;
  std::vector<float> depth, depth_conf;
  std::vector<float> points, point_conf;
  std::vector<int32_t> point_pixels;
  std::vector<int32_t> pair_matches;
  std::vector<float> loss;
};

ReconstructArrays reconstruct_arrays(const gpu::SceneAlignment& scene, std::span<const gpu::DenseImage> dense,
                                     std::span<const gpu::PairMatches> pairs, float min_conf);

// The arrays as result tensors on `rt`'s device.
Result<std::vector<StoredTensor>> store_reconstruct_arrays(gpu::Runtime& rt, const ReconstructArrays& arrays);

}  // namespace recon::daemon
