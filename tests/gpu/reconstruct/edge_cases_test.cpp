// What align_scene does with awkward inputs: disconnected match graphs (each component aligned in
// its own frame, single images reported), pairs without matches, images of different sizes, invalid
// inputs (INVALID_ARGUMENT, never a crash), cancellation through the progress callback, and a NaN
// loss stopping a stage.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gpu/reconstruct/alignment_problem.h"
#include "gpu/reconstruct/dense_points.h"
#include "gpu/reconstruct/sparse_alignment.h"
#include "tests/gpu/reconstruct/synthetic_scene.h"

namespace recon::gpu {
namespace {

// Short runs: these tests are about structure, not accuracy.
AlignmentOptions quick_options() {
  AlignmentOptions o;
  o.niter1 = 100;
  o.niter2 = 50;
  return o;
}

testing::SyntheticScene small_scene(int cameras, std::uint32_t seed) {
  testing::SceneOptions o;
  o.num_cameras = cameras;
  o.width = 96;
  o.height = 64;
  o.focal = 80;
  o.match_stride = 2;
  o.exact_predictions_once = true;
  o.seed = seed;
  return testing::make_scene(o);
}

double worst_rotation(const SceneAlignment& a, const testing::SyntheticScene& s, const std::vector<int>& images) {
  std::vector<std::array<double, 16>> poses;
  std::vector<testing::SyntheticCamera> truth;
  for (const int i : images) {
    poses.push_back(a.cameras[static_cast<std::size_t>(i)].cam_to_world);
    truth.push_back(s.cameras[static_cast<std::size_t>(i)]);
  }
  const testing::PoseErrors e = testing::pose_errors(poses, truth);
  double worst = 0;
  for (const double r : e.rotation_deg) worst = std::max(worst, r);
  return worst;
}

TEST(AlignmentEdgeCases, DisconnectedGraphAlignsEachComponentInItsOwnFrame) {
  // Seven images: pairs only inside {0,1,2} and inside {3,4,5}; image 6 has none.
  testing::SyntheticScene scene = small_scene(7, 21);
  std::vector<PairMatches> pairs;
  for (const PairMatches& p : scene.pairs) {
    const bool first = p.image_a < 3 && p.image_b < 3;
    const bool second = p.image_a >= 3 && p.image_a < 6 && p.image_b >= 3 && p.image_b < 6;
    if (first || second) pairs.push_back(p);
  }
  auto result = align_scene(scene.views, pairs, quick_options());
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  ASSERT_EQ(result->components.size(), 3u);
  EXPECT_EQ(result->component, (std::vector<int>{0, 0, 0, 1, 1, 1, 2}));
  EXPECT_EQ(result->components[0].images, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(result->components[1].images, (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(result->components[2].images, (std::vector<int>{6}));
  EXPECT_EQ(result->components[0].tree.edges.size(), 2u);
  EXPECT_EQ(result->components[1].tree.edges.size(), 2u);
  EXPECT_TRUE(result->components[2].tree.edges.empty());
  EXPECT_EQ(result->components[0].coarse_loss.size(), 100u);
  EXPECT_EQ(result->components[1].fine_loss.size(), 50u);
  EXPECT_TRUE(result->components[2].coarse_loss.empty());
  // The single image: identity pose, its canonical focal, principal point at the centre.
  const AlignedCamera& lone = result->cameras[6];
  EXPECT_EQ(lone.cam_to_world, (std::array<double, 16>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  EXPECT_EQ(lone.focal, scene.views[6].focal);
  EXPECT_EQ(lone.cx, 48.0);
  EXPECT_EQ(lone.cy, 32.0);
  EXPECT_EQ(result->anchor_depth[6], scene.views[6].anchor_depth);
  // Dense points come for every image; cleaning stays inside each component.
  const std::vector<DenseImage> dense = dense_points(*result, scene.views);
  ASSERT_EQ(dense.size(), 7u);
  for (const DenseImage& d : dense) EXPECT_EQ(d.points.size(), 96u * 64u * 3u);

  // Each component is aligned in its own frame: the coarse stage (300 iterations) recovers both.
  AlignmentOptions coarse;
  coarse.level = AlignmentOptions::Level::kCoarse;
  auto aligned = align_scene(scene.views, pairs, coarse);
  ASSERT_TRUE(aligned.is_ok());
  EXPECT_LT(worst_rotation(*aligned, scene, {0, 1, 2}), 0.5);
  EXPECT_LT(worst_rotation(*aligned, scene, {3, 4, 5}), 0.5);
}

TEST(AlignmentEdgeCases, PairWithoutMatchesIsSkipped) {
  const testing::SyntheticScene scene = small_scene(4, 22);
  // Without pair 0, and with pair 0 present but empty: the same alignment, the pair reported.
  std::vector<PairMatches> without(scene.pairs.begin() + 1, scene.pairs.end());
  std::vector<PairMatches> with_empty = scene.pairs;
  with_empty[0].xy_a.clear();
  with_empty[0].xy_b.clear();
  with_empty[0].conf.clear();
  const auto baseline = align_scene(scene.views, without, quick_options());
  ASSERT_TRUE(baseline.is_ok()) << baseline.status().to_string();
  auto result = align_scene(scene.views, with_empty, quick_options());
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(result->skipped_pairs, std::vector<int>{0});
  EXPECT_TRUE(baseline->skipped_pairs.empty());
  EXPECT_EQ(result->components.size(), 1u);
  EXPECT_EQ(result->fine_loss, baseline->fine_loss);
  EXPECT_EQ(result->cameras[1].cam_to_world, baseline->cameras[1].cam_to_world);
  // A pair whose matches all have confidence 0 does not pass the (demo) threshold 0 either.
  std::vector<PairMatches> zero_conf = scene.pairs;
  std::fill(zero_conf[0].conf.begin(), zero_conf[0].conf.end(), 0.0f);
  auto zero = align_scene(scene.views, zero_conf, quick_options());
  ASSERT_TRUE(zero.is_ok());
  EXPECT_EQ(zero->skipped_pairs, std::vector<int>{0});
}

TEST(AlignmentEdgeCases, ImagesOfDifferentSizesAlign) {
  testing::SceneOptions o;
  o.num_cameras = 5;
  o.width = 96;
  o.height = 64;
  o.focal = 80;
  o.match_stride = 3;
  o.exact_predictions_once = true;
  o.sizes = {{96, 64}, {80, 64}, {96, 48}, {64, 64}, {88, 56}};
  o.seed = 23;
  const testing::SyntheticScene scene = testing::make_scene(o);
  AlignmentOptions coarse;
  coarse.level = AlignmentOptions::Level::kCoarse;
  auto aligned = align_scene(scene.views, scene.pairs, coarse);
  ASSERT_TRUE(aligned.is_ok()) << aligned.status().to_string();
  EXPECT_LT(worst_rotation(*aligned, scene, {0, 1, 2, 3, 4}), 0.5);
  auto result = align_scene(scene.views, scene.pairs, AlignmentOptions{});
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();
  EXPECT_EQ(result->cameras[1].width, 80);
  EXPECT_EQ(result->cameras[2].height, 48);
  EXPECT_EQ(result->anchor_depth[4].size(), 11u * 7u);
  // The fine stage drifts a little along weakly constrained directions (see
  // synthetic_alignment_test.cpp), so its bounds are looser than the coarse stage's.
  EXPECT_LT(worst_rotation(*result, scene, {0, 1, 2, 3, 4}), 2.0);
  for (std::size_t i = 0; i < scene.cameras.size(); ++i) {
    EXPECT_NEAR(aligned->cameras[i].focal, scene.cameras[i].focal, 0.01 * scene.cameras[i].focal) << i;
    EXPECT_NEAR(result->cameras[i].focal, scene.cameras[i].focal, 0.03 * scene.cameras[i].focal) << i;
    EXPECT_NEAR(result->cameras[i].cx, scene.cameras[i].width / 2.0, 0.05 * scene.cameras[i].width) << i;
  }
}

class InvalidInput : public ::testing::Test {
 protected:
  void SetUp() override { scene_ = small_scene(3, 24); }
  void expect_invalid(const std::vector<CanonicalView>& views, const std::vector<PairMatches>& pairs,
                      const std::string& mentions, AlignmentOptions options = quick_options()) {
    auto result = align_scene(views, pairs, options);
    ASSERT_FALSE(result.is_ok());
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument) << result.status().to_string();
    EXPECT_NE(result.status().message().find(mentions), std::string::npos) << result.status().message();
  }
  testing::SyntheticScene scene_;
};

TEST_F(InvalidInput, FewerThanTwoImagesAreRefused) {
  expect_invalid({scene_.views[0]}, {}, "at least 2 images");
  expect_invalid({}, {}, "at least 2 images");
}

TEST_F(InvalidInput, PairNamingAnUnknownImageOrItselfIsRefused) {
  std::vector<PairMatches> pairs = scene_.pairs;
  pairs[0].image_b = 7;
  expect_invalid(scene_.views, pairs, "outside 0..2");
  pairs = scene_.pairs;
  pairs[0].image_b = pairs[0].image_a;
  expect_invalid(scene_.views, pairs, "itself");
  pairs = scene_.pairs;
  pairs[0].image_a = -1;
  expect_invalid(scene_.views, pairs, "outside");
}

TEST_F(InvalidInput, MatchOutsideItsImageIsRefused) {
  std::vector<PairMatches> pairs = scene_.pairs;
  pairs[0].xy_b[1] = 64;  // y == H
  expect_invalid(scene_.views, pairs, "outside its 96x64 image");
  pairs = scene_.pairs;
  pairs[0].xy_a[0] = -1;
  expect_invalid(scene_.views, pairs, "outside its");
}

TEST_F(InvalidInput, InconsistentMatchArraysAreRefused) {
  std::vector<PairMatches> pairs = scene_.pairs;
  pairs[0].xy_a.pop_back();
  expect_invalid(scene_.views, pairs, "coordinates for");
}

TEST_F(InvalidInput, NonFiniteOrNegativeConfidenceIsRefused) {
  std::vector<PairMatches> pairs = scene_.pairs;
  pairs[0].conf[3] = std::numeric_limits<float>::quiet_NaN();
  expect_invalid(scene_.views, pairs, "confidence");
  pairs = scene_.pairs;
  pairs[0].conf[3] = -1.0f;
  expect_invalid(scene_.views, pairs, "confidence");
}

TEST_F(InvalidInput, RepeatedPairIsRefused) {
  std::vector<PairMatches> pairs = scene_.pairs;
  PairMatches swapped = pairs[0];
  std::swap(swapped.image_a, swapped.image_b);
  std::swap(swapped.xy_a, swapped.xy_b);
  pairs.push_back(swapped);
  expect_invalid(scene_.views, pairs, "repeats pair 0");
}

TEST_F(InvalidInput, BadCanonicalViewsAreRefused) {
  std::vector<CanonicalView> views = scene_.views;
  views[1].canon2[10] = std::numeric_limits<double>::infinity();
  expect_invalid(views, scene_.pairs, "image 1");
  views = scene_.views;
  views[2].conf.pop_back();
  expect_invalid(views, scene_.pairs, "array sizes");
  views = scene_.views;
  views[0].subsample = 4;
  expect_invalid(views, scene_.pairs, "subsample");
  views = scene_.views;
  views[0].focal = std::nan("");
  expect_invalid(views, scene_.pairs, "focal");
  views = scene_.views;
  for (double& d : views[0].anchor_depth) d = -std::abs(d);
  expect_invalid(views, scene_.pairs, "median depth");
  AlignmentOptions bad = quick_options();
  bad.subsample = 0;
  expect_invalid(scene_.views, scene_.pairs, "subsample", bad);
  bad = quick_options();
  bad.lr1 = std::nan("");
  expect_invalid(scene_.views, scene_.pairs, "learning rates", bad);
}

TEST(AlignmentEdgeCases, ProgressReportsBothStagesAndFalseCancels) {
  const testing::SyntheticScene scene = small_scene(3, 25);
  std::vector<std::string> stages;
  int last = 0, total = 0;
  auto done = align_scene(scene.views, scene.pairs, quick_options(),
                          [&](std::string_view stage, int iteration, int n, double loss) {
                            if (stages.empty() || stages.back() != stage) stages.emplace_back(stage);
                            EXPECT_TRUE(std::isfinite(loss));
                            last = iteration;
                            total = n;
                            return true;
                          });
  ASSERT_TRUE(done.is_ok());
  EXPECT_EQ(stages, (std::vector<std::string>{"align-coarse", "align-fine"}));
  EXPECT_EQ(last, 50);
  EXPECT_EQ(total, 50);

  int calls = 0;
  auto cancelled = align_scene(scene.views, scene.pairs, quick_options(),
                               [&](std::string_view, int, int, double) { return ++calls < 10; });
  ASSERT_FALSE(cancelled.is_ok());
  EXPECT_EQ(cancelled.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(calls, 10);
}

TEST(AlignmentEdgeCases, CoarseLevelRunsOnlyTheFirstStage) {
  const testing::SyntheticScene scene = small_scene(3, 26);
  AlignmentOptions o = quick_options();
  o.level = AlignmentOptions::Level::kCoarse;
  auto result = align_scene(scene.views, scene.pairs, o);
  ASSERT_TRUE(result.is_ok());
  EXPECT_EQ(result->coarse_loss.size(), 100u);
  EXPECT_TRUE(result->fine_loss.empty());
  // The focals stay at their canonical estimates in the coarse stage.
  for (std::size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(result->cameras[i].focal, scene.views[i].focal);
}

TEST(AlignmentEdgeCases, NanLossStopsTheStageBeforeStepping) {
  sga::ComponentInput in;
  const testing::SyntheticScene scene = small_scene(2, 27);
  // A two-image problem built directly, then a NaN planted in a translation.
  for (const CanonicalView& v : scene.views) {
    sga::ImageConstants im;
    im.width = v.width;
    im.height = v.height;
    im.anchors_x = v.anchors_x();
    im.anchors_y = v.anchors_y();
    im.base_focal = v.focal;
    im.median_depth = v.anchor_depth[v.anchor_depth.size() / 2];
    im.min_focal = 1;
    im.max_focal = 1e4;
    in.images.push_back(im);
    in.anchor_depths.push_back(v.anchor_depth);
    in.mean_conf.push_back(1.0);
  }
  sga::PairSoA pair;
  pair.image_b = 1;
  for (int m = 0; m < 10; ++m) {
    pair.xa.push_back(m);
    pair.ya.push_back(m);
    pair.xb.push_back(m);
    pair.yb.push_back(m);
    pair.anchor_a.push_back(0);
    pair.anchor_b.push_back(0);
    pair.offa.push_back(0);
    pair.offb.push_back(0);
    pair.conf.push_back(1);
  }
  in.pairs.push_back(pair);
  in.tree.root = 0;
  in.tree.edges = {{0, 1}};
  sga::WorkerPool pool(1);
  sga::ComponentAligner aligner(std::move(in), pool);
  aligner.parameters()[static_cast<std::size_t>(aligner.model().layout.trans(1))] = std::nan("");
  const std::vector<double> before = aligner.parameters();
  const auto outcome = aligner.run_stage(sga::Stage::kCoarse, 0.07, 30, false, {});
  EXPECT_TRUE(outcome.stopped_on_nan);
  ASSERT_EQ(outcome.losses.size(), 1u);
  EXPECT_TRUE(std::isnan(outcome.losses[0]));
  // No step was taken: every other parameter is unchanged.
  for (std::size_t k = 0; k < before.size(); ++k) {
    if (!std::isnan(before[k])) {
      EXPECT_EQ(aligner.parameters()[k], before[k]) << k;
    }
  }
}

}  // namespace
}  // namespace recon::gpu
