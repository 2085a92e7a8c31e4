// Timing of what the daemon runs (reported, not asserted): 20 images at 512x384, subsample 8, the
// complete pair graph with about 1,500 matches per pair, 300 + 300 iterations; one thread against all
// of the host's, in the same run. Also the streaming cost of one own-frame prediction and the dense
// output.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "gpu/reconstruct/dense_points.h"
#include "gpu/reconstruct/sparse_alignment.h"
#include "tests/gpu/reconstruct/synthetic_scene.h"

namespace recon::gpu {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(AlignmentTiming, TwentyImagesAt512x384CompleteGraph) {
  testing::SceneOptions o;
  o.num_cameras = 20;
  o.width = 512;
  o.height = 384;
  o.focal = 420;
  o.subsample = 8;
  o.arc_degrees = 50;
  o.match_stride = 8;
  o.max_matches_per_pair = 1500;
  o.min_matches = 1;
  o.exact_predictions_once = true;
  o.seed = 7;
  const testing::SyntheticScene scene = testing::make_scene(o);
  std::size_t matches = 0;
  for (const PairMatches& p : scene.pairs) matches += p.conf.size();
  std::printf("scene: %zu images, %zu pairs (complete graph: %d), %zu matches (%.0f per pair)\n", scene.views.size(),
              scene.pairs.size(), 20 * 19 / 2, matches, static_cast<double>(matches) / scene.pairs.size());

  // Streaming one own-frame prediction into a canonical view.
  {
    const std::vector<double> exact = testing::exact_pointmap(scene.cameras[0]);
    const std::vector<float> pts(exact.begin(), exact.end());
    const std::vector<float> conf(pts.size() / 3, 2.0f);
    CanonicalViewBuilder builder(o.height, o.width, o.subsample);
    const auto start = std::chrono::steady_clock::now();
    const int reps = 10;
    for (int r = 0; r < reps; ++r) builder.add(pts, conf);
    const double add_ms = 1e3 * seconds_since(start) / reps;
    const auto finish_start = std::chrono::steady_clock::now();
    auto view = builder.finish();
    ASSERT_TRUE(view.is_ok());
    std::printf("canonical view: %.2f ms per streamed prediction, %.2f ms per finish()\n", add_ms,
                1e3 * seconds_since(finish_start));
  }

  const int all = static_cast<int>(std::thread::hardware_concurrency());
  double one_thread = 0;
  for (const int threads : {1, all}) {
    AlignmentOptions options;
    options.threads = threads;
    const auto start = std::chrono::steady_clock::now();
    auto result = align_scene(scene.views, scene.pairs, options);
    const double s = seconds_since(start);
    ASSERT_TRUE(result.is_ok()) << result.status().to_string();
    if (threads == 1) one_thread = s;
    std::printf(
        "align_scene, %2d thread(s): %.3f s (%.2f ms per iteration), %.2fx the 1-thread time; final "
        "reprojection %.3f px\n",
        threads, s, 1e3 * s / 600, one_thread / s, result->fine_reprojection_px);
    if (threads == all) {
      const auto dense_start = std::chrono::steady_clock::now();
      const std::vector<DenseImage> dense = dense_points(*result, scene.views, true);
      std::printf("dense_points + clean_pointcloud, %d threads: %.3f s\n", threads, seconds_since(dense_start));
      EXPECT_EQ(dense.size(), scene.views.size());
    }
    if (all == 1) break;
  }
}

}  // namespace
}  // namespace recon::gpu
