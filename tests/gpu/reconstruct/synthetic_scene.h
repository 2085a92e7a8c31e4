// A procedural scene with known cameras for the alignment tests: a box room with three spheres,
// pinhole cameras on an arc looking at its centre, exact ray-cast own-frame pointmaps (optionally
// noisy) streamed into canonical views, and matches from the ground truth (optionally noisy, with
// outliers). Also the similarity fit (Horn/Umeyama on camera centres) that scores a recovered scene.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "gpu/reconstruct/canonical_view.h"
#include "gpu/reconstruct/sparse_alignment.h"

namespace recon::gpu::testing {

struct SyntheticCamera {
  std::array<double, 9> rotation{};  // cam-to-world, row-major
  std::array<double, 3> centre{};
  double focal = 0;  // principal point (W/2, H/2)
  int width = 0, height = 0;
};

struct SceneOptions {
  int num_cameras = 8;
  int width = 96, height = 64;
  double focal = 80;
  int subsample = 8;
  double arc_degrees = 60;                // cameras spread over this arc around the scene centre
  double depth_noise = 0;                 // relative, per pixel and prediction
  double match_noise_px = 0;              // Gaussian sigma before rounding to integer pixels
  double outlier_fraction = 0;            // matches whose pixel in b is replaced by a random one
  int match_stride = 2;                   // grid of query pixels in image a
  int max_matches_per_pair = 0;           // random subset above this (0: all)
  int min_matches = 20;                   // pairs with fewer are left out
  bool exact_predictions_once = false;    // add each image's exact pointmap once (faster; same canonical view)
  std::vector<std::array<int, 2>> sizes;  // optional per-camera (width, height)
  std::uint32_t seed = 1;
};

struct SyntheticScene {
  std::vector<SyntheticCamera> cameras;
  std::vector<CanonicalView> views;
  std::vector<PairMatches> pairs;
  double camera_spread = 0;  // largest distance between two camera centres
};

SyntheticScene make_scene(const SceneOptions& options);

// The camera's exact own-frame pointmap, H*W*3.
std::vector<double> exact_pointmap(const SyntheticCamera& camera);

struct PoseErrors {
  std::vector<double> rotation_deg;  // per camera, after the similarity
  std::vector<double> centre;        // per camera, distance after the similarity / camera spread
  double scale = 0;
};

// Fits the similarity taking the recovered camera centres onto the true ones (least squares) and
// reports each camera's rotation and centre error under it.
PoseErrors pose_errors(const std::vector<std::array<double, 16>>& cam_to_world,
                       const std::vector<SyntheticCamera>& truth);

}  // namespace recon::gpu::testing
