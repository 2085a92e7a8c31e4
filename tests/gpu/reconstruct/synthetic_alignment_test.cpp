// The key end-to-end check: a procedural scene with known cameras, own-frame pointmaps from exact
// ray casting and matches from the ground truth; the alignment must recover every pose up to one
// similarity (rotation error < 0.5 deg, centre error < 1 % of the camera spread) and every focal
// within 1 %: from exact inputs after both stages, from noisy inputs with outliers after the coarse
// stage (the official fine stage drifts on them; see the noisy test). Official iteration counts.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "gpu/reconstruct/sparse_alignment.h"
#include "tests/gpu/reconstruct/synthetic_scene.h"

namespace recon::gpu {
namespace {

using testing::SceneOptions;

struct Errors {
  double rotation_deg = 0, centre = 0, focal = 0;  // worst over the cameras
};

Errors worst_errors(const SceneAlignment& aligned, const testing::SyntheticScene& scene) {
  std::vector<std::array<double, 16>> poses;
  for (const AlignedCamera& c : aligned.cameras) poses.push_back(c.cam_to_world);
  const testing::PoseErrors e = testing::pose_errors(poses, scene.cameras);
  Errors w;
  for (std::size_t i = 0; i < scene.cameras.size(); ++i) {
    w.rotation_deg = std::max(w.rotation_deg, e.rotation_deg[i]);
    w.centre = std::max(w.centre, e.centre[i]);
    w.focal = std::max(w.focal, std::abs(aligned.cameras[i].focal / scene.cameras[i].focal - 1));
  }
  return w;
}

// Aligns with the official defaults (300 + 300 iterations, refine+depth), or the coarse stage only.
SceneAlignment align(const testing::SyntheticScene& scene, AlignmentOptions::Level level, const char* label) {
  AlignmentOptions options;
  options.level = level;
  const auto start = std::chrono::steady_clock::now();
  auto result = align_scene(scene.views, scene.pairs, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(result.is_ok()) << result.status().to_string();
  if (!result.is_ok()) return {};
  const Errors e = worst_errors(*result, scene);
  std::printf(
      "[%s] %zu cameras, %zu pairs, %d matches: %.2f s; worst rotation %.4f deg, centre %.5f of the camera "
      "spread, focal %.5f; reprojection %.3f px\n",
      label, scene.cameras.size(), scene.pairs.size(), result->components[0].matches, seconds, e.rotation_deg, e.centre,
      e.focal, result->fine_reprojection_px);
  return std::move(result).value();
}

TEST(SyntheticAlignment, ExactInputsRecoverEveryCamera) {
  SceneOptions o;
  o.num_cameras = 8;
  o.exact_predictions_once = true;
  o.seed = 3;
  const testing::SyntheticScene scene = testing::make_scene(o);
  ASSERT_GE(scene.pairs.size(), 20u);
  const SceneAlignment aligned = align(scene, AlignmentOptions::Level::kRefineDepth, "exact");
  ASSERT_EQ(aligned.components.size(), 1u);
  const Errors e = worst_errors(aligned, scene);
  EXPECT_LT(e.rotation_deg, 0.5);
  EXPECT_LT(e.centre, 0.01);
  EXPECT_LT(e.focal, 0.01);
  ASSERT_EQ(aligned.coarse_loss.size(), 300u);
  ASSERT_EQ(aligned.fine_loss.size(), 300u);
  EXPECT_LT(aligned.coarse_loss.back(), 0.2 * aligned.coarse_loss.front());
  // Integer pixel matches: the error of a perfect reconstruction is the rounding, about 0.4 px.
  EXPECT_LT(aligned.fine_reprojection_px, 1.0);
}

// 1 % depth noise, 0.5 px match noise and 20 % outliers (random pixels, ordinary confidence).
//
// The coarse stage meets the accuracy targets. The official fine stage does not on this scene: Adam
// at lr 0.01 moves every parameter (quaternions, normalised principal points, per-anchor depths) by
// about 0.01 per step, and the reprojection loss with free anchor depths and focals is nearly flat
// along some pose/focal/depth directions, so the fine stage wanders along them and even lowers the
// loss below the ground truth's. The PyTorch reference (tests/reference/sparse_ga_ref.py) run on this
// very scene gives 1.555 deg, 0.47 % and 1.87 % after the fine stage (0.257 deg, 0.17 %, 0 % after
// the coarse one); this port gives the same to about 1e-3. The fine-stage bounds below are that
// behaviour with a margin, not the targets.
TEST(SyntheticAlignment, NoisyInputsWithOutliersRecoverEveryCamera) {
  SceneOptions o;
  o.num_cameras = 8;
  o.depth_noise = 0.01;      // per pixel and prediction
  o.match_noise_px = 0.5;    // before rounding to integer pixels
  o.outlier_fraction = 0.2;  // random pixel in b
  o.seed = 4;
  const testing::SyntheticScene scene = testing::make_scene(o);
  ASSERT_GE(scene.pairs.size(), 20u);

  const SceneAlignment coarse = align(scene, AlignmentOptions::Level::kCoarse, "noisy, coarse stage");
  const Errors c = worst_errors(coarse, scene);
  EXPECT_LT(c.rotation_deg, 0.5);
  EXPECT_LT(c.centre, 0.01);
  EXPECT_LT(c.focal, 0.01);

  const SceneAlignment fine = align(scene, AlignmentOptions::Level::kRefineDepth, "noisy, both stages");
  const Errors f = worst_errors(fine, scene);
  EXPECT_LT(f.rotation_deg, 2.5);
  EXPECT_LT(f.centre, 0.01);
  EXPECT_LT(f.focal, 0.03);
  // The outliers (a fifth of the matches, tens of pixels off) dominate the mean reprojection error.
  EXPECT_LT(fine.fine_reprojection_px, 15.0);
}

}  // namespace
}  // namespace recon::gpu
