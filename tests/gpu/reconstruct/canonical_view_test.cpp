// Canonical views: the confidence-weighted mean, the 'avg-angle' relative depth (1 at the anchors,
// the averaged slope angle elsewhere), the output confidence, the Weiszfeld focal and its clamps,
// and the refusal of bad predictions.
#include "gpu/reconstruct/canonical_view.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "gpu/reconstruct/focal_estimate.h"

namespace recon::gpu {
namespace {

std::size_t area(int h, int w) {
  return static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
}

// A pinhole camera's pointmap of the plane z = z0 + slope_x * X (camera frame), H*W*3.
std::vector<double> pinhole_plane(int h, int w, double f, double z0, double slope_x) {
  std::vector<double> pts(3 * area(h, w));
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const double rx = (x - w / 2.0) / f, ry = (y - h / 2.0) / f;
      const double z = z0 / (1.0 - slope_x * rx);  // the ray z (rx, ry, 1) meets the plane
      const std::size_t p = static_cast<std::size_t>(y) * w + x;
      pts[3 * p] = z * rx;
      pts[3 * p + 1] = z * ry;
      pts[3 * p + 2] = z;
    }
  }
  return pts;
}

TEST(CanonicalView, TwoPredictionsGiveTheirConfidenceWeightedMean) {
  const int h = 8, w = 8, s = 4;
  const std::vector<double> a = pinhole_plane(h, w, 10.0, 2.0, 0.0);
  const std::vector<double> b = pinhole_plane(h, w, 10.0, 4.0, 0.3);
  const std::vector<double> conf_a(area(h, w), 2.0), conf_b(area(h, w), 4.0);
  CanonicalViewBuilder builder(h, w, s);
  builder.add(a, conf_a);
  builder.add(b, conf_b);
  auto view = builder.finish();
  ASSERT_TRUE(view.is_ok()) << view.status().to_string();
  const double wa = 2.0 - 0.999, wb = 4.0 - 0.999;
  const std::vector<double> mean = builder.mean_points();
  for (std::size_t k = 0; k < mean.size(); ++k) EXPECT_NEAR(mean[k], (wa * a[k] + wb * b[k]) / (wa + wb), 1e-12);
  for (double c : view->conf) EXPECT_NEAR(c, (wa * wa + wb * wb) / (wa + wb), 1e-12);
  ASSERT_EQ(view->anchor_depth.size(), 4u);
  // Anchor (1, 0) sits at pixel (6, 2).
  const std::size_t p = 2 * w + 6;
  EXPECT_NEAR(view->anchor_depth[1], (wa * a[3 * p + 2] + wb * b[3 * p + 2]) / (wa + wb), 1e-12);
  EXPECT_EQ(view->predictions, 2);
}

TEST(CanonicalView, RelativeDepthIsOneAtTheAnchors) {
  const int h = 16, w = 24, s = 8;
  CanonicalViewBuilder builder(h, w, s);
  builder.add(pinhole_plane(h, w, 20.0, 3.0, 0.4), std::vector<double>(area(h, w), 3.0));
  builder.add(pinhole_plane(h, w, 20.0, 2.5, -0.2), std::vector<double>(area(h, w), 1.5));
  auto view = builder.finish();
  ASSERT_TRUE(view.is_ok()) << view.status().to_string();
  for (int by = 0; by < h / s; ++by) {
    for (int bx = 0; bx < w / s; ++bx) {
      EXPECT_EQ(view->canon2[area(by * s + s / 2, w) + static_cast<std::size_t>(bx * s + s / 2)], 1.0);
    }
  }
  // Elsewhere the tilted planes make it differ from 1.
  EXPECT_NE(view->canon2[0], 1.0);
}

TEST(CanonicalView, OnePredictionGivesDepthOverAnchorDepth) {
  // With a single prediction the angle round trip is exact: canon2 = z(p) / z(anchor).
  const int h = 16, w = 16, s = 8;
  const std::vector<double> pts = pinhole_plane(h, w, 15.0, 3.0, 0.5);
  CanonicalViewBuilder builder(h, w, s);
  builder.add(pts, std::vector<double>(area(h, w), 2.0));
  auto view = builder.finish();
  ASSERT_TRUE(view.is_ok());
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const std::size_t p = static_cast<std::size_t>(y) * w + x;
      const std::size_t a = area((y / s) * s + s / 2, w) + static_cast<std::size_t>((x / s) * s + s / 2);
      EXPECT_NEAR(view->canon2[p], pts[3 * p + 2] / pts[3 * a + 2], 1e-12) << x << "," << y;
    }
  }
}

TEST(CanonicalView, TiltedPlanesAverageTheirSlopeAngles) {
  // Two predictions on a regular lateral grid, z_k = z0_k + k_k X: in a block, the pixel at lateral
  // offset (dX, dY) from the anchor has angle atan(k_k dX / r), r = |(dX, dY)|; canon2 is
  // 1 + r tan(weighted mean angle) / canon_z(anchor).
  const int h = 8, w = 8, s = 4;
  const double z0[2] = {3.0, 3.6}, k[2] = {0.5, -0.2}, conf[2] = {2.5, 1.4};
  CanonicalViewBuilder builder(h, w, s);
  for (int j = 0; j < 2; ++j) {
    std::vector<double> pts(3 * area(h, w));
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        const std::size_t p = static_cast<std::size_t>(y) * w + x;
        const double lateral_x = 0.1 * x, lateral_y = 0.1 * y;
        pts[3 * p] = lateral_x;
        pts[3 * p + 1] = lateral_y;
        pts[3 * p + 2] = z0[j] + k[j] * lateral_x;
      }
    }
    builder.add(pts, std::vector<double>(area(h, w), conf[j]));
  }
  auto view = builder.finish();
  ASSERT_TRUE(view.is_ok());
  const double w0 = conf[0] - 0.999, w1 = conf[1] - 0.999;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const int ax = (x / s) * s + s / 2, ay = (y / s) * s + s / 2;
      const double dx = 0.1 * (x - ax), dy = 0.1 * (y - ay);
      const double r = std::max(std::hypot(dx, dy), 1e-8);
      const double angle = (w0 * std::atan(k[0] * dx / r) + w1 * std::atan(k[1] * dx / r)) / (w0 + w1);
      const double anchor_z = (w0 * (z0[0] + k[0] * 0.1 * ax) + w1 * (z0[1] + k[1] * 0.1 * ax)) / (w0 + w1);
      const double expected = 1.0 + r * std::tan(angle) / anchor_z;
      EXPECT_NEAR(view->canon2[static_cast<std::size_t>(y) * w + x], expected, 1e-12) << x << "," << y;
    }
  }
}

TEST(CanonicalView, WeiszfeldRecoversThePinholeFocal) {
  const int h = 48, w = 64;
  const double f = 71.3;
  // Exact pinhole points with varying depth: the residual is zero at the true focal.
  std::vector<double> pts(3 * area(h, w));
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const std::size_t p = static_cast<std::size_t>(y) * w + x;
      const double z = 2.0 + std::sin(0.3 * x) + 0.5 * std::cos(0.2 * y);
      pts[3 * p] = z * (x - w / 2.0) / f;
      pts[3 * p + 1] = z * (y - h / 2.0) / f;
      pts[3 * p + 2] = z;
    }
  }
  EXPECT_NEAR(estimate_focal_weiszfeld(pts, h, w, w / 2.0, h / 2.0), f, 1e-6 * f);
  // Through the builder too (its focal uses pp = (W/2, H/2)).
  CanonicalViewBuilder builder(h, w, 8);
  builder.add(pts, std::vector<double>(area(h, w), 2.0));
  auto view = builder.finish();
  ASSERT_TRUE(view.is_ok());
  EXPECT_NEAR(view->focal, f, 1e-6 * f);
}

TEST(CanonicalView, WeiszfeldRespectsTheClamps) {
  const int h = 48, w = 64;
  const double base = w / (2.0 * std::tan(std::numbers::pi / 6.0));
  for (const double f : {500.0, 10.0}) {
    const std::vector<double> pts = pinhole_plane(h, w, f, 2.0, 0.0);
    const double got = estimate_focal_weiszfeld(pts, h, w, w / 2.0, h / 2.0);
    EXPECT_DOUBLE_EQ(got, f > base ? 3.5 * base : 0.5 * base) << "true focal " << f;
  }
  // Every point on the optical axis: undefined, so the base focal instead of NaN.
  std::vector<double> axis(3 * area(h, w), 0.0);
  for (std::size_t p = 0; p < axis.size() / 3; ++p) axis[3 * p + 2] = 1.0;
  EXPECT_DOUBLE_EQ(estimate_focal_weiszfeld(axis, h, w, w / 2.0, h / 2.0), base);
}

TEST(CanonicalView, RefusesBadPredictionsAndReportsTheFirst) {
  const int h = 8, w = 8;
  const std::vector<double> good = pinhole_plane(h, w, 10.0, 2.0, 0.0);
  {
    CanonicalViewBuilder builder(h, w, 4);
    EXPECT_FALSE(builder.finish().is_ok()) << "no prediction at all";
  }
  {
    CanonicalViewBuilder builder(h, w, 4);
    builder.add(std::vector<double>(good.begin(), good.end() - 3), std::vector<double>(area(h, w), 2.0));
    builder.add(good, std::vector<double>(area(h, w), 2.0));
    auto view = builder.finish();
    ASSERT_FALSE(view.is_ok());
    EXPECT_EQ(view.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(view.status().message().find("prediction 0"), std::string::npos) << view.status().message();
    EXPECT_EQ(builder.predictions(), 1);  // the good one was still added
  }
  {
    std::vector<double> nan = good;
    nan[5] = std::nan("");
    CanonicalViewBuilder builder(h, w, 4);
    builder.add(nan, std::vector<double>(area(h, w), 2.0));
    EXPECT_EQ(builder.finish().status().code(), StatusCode::kInvalidArgument);
  }
  {
    std::vector<double> conf(area(h, w), 2.0);
    conf[3] = 0.999;  // weight 0
    CanonicalViewBuilder builder(h, w, 4);
    builder.add(good, conf);
    EXPECT_EQ(builder.finish().status().code(), StatusCode::kInvalidArgument);
  }
  {
    CanonicalViewBuilder builder(10, 8, 4);  // 10 is not a multiple of 4
    builder.add(std::vector<float>(3 * area(10, 8), 1.0f), std::vector<float>(area(10, 8), 2.0f));
    EXPECT_EQ(builder.finish().status().code(), StatusCode::kInvalidArgument);
  }
  {
    // An anchor at depth 0 makes the relative depth undefined.
    std::vector<double> flat = good;
    flat[3 * (2 * w + 2) + 2] = 0.0;
    CanonicalViewBuilder builder(h, w, 4);
    builder.add(flat, std::vector<double>(area(h, w), 2.0));
    EXPECT_EQ(builder.finish().status().code(), StatusCode::kInvalidArgument);
  }
}

TEST(CanonicalView, FloatAndDoublePredictionsAgree) {
  const int h = 16, w = 16;
  const std::vector<double> pts = pinhole_plane(h, w, 12.0, 2.0, 0.3);
  std::vector<float> ptsf(pts.begin(), pts.end());
  CanonicalViewBuilder bd(h, w, 8), bf(h, w, 8);
  bd.add(pts, std::vector<double>(area(h, w), 2.0));
  bf.add(ptsf, std::vector<float>(area(h, w), 2.0f));
  auto vd = bd.finish(), vf = bf.finish();
  ASSERT_TRUE(vd.is_ok() && vf.is_ok());
  for (std::size_t p = 0; p < vd->canon2.size(); ++p) EXPECT_NEAR(vd->canon2[p], vf->canon2[p], 1e-6);
  EXPECT_NEAR(vd->focal, vf->focal, 1e-4);
}

}  // namespace
}  // namespace recon::gpu

namespace recon::gpu {
namespace {

// Three images' float predictions (planes of different depths and slopes), interleaved by image.
struct ThreeImages {
  static constexpr int h = 16, w = 24, s = 8;
  std::vector<std::vector<float>> pts, conf;
  std::vector<OwnFrameMaps> maps;
  ThreeImages() {
    for (int k = 0; k < 7; ++k) {
      const std::vector<double> plane = pinhole_plane(h, w, 20.0, 2.0 + 0.5 * k, 0.1 * (k % 3));
      pts.emplace_back(plane.begin(), plane.end());
      conf.emplace_back(area(h, w), 1.5f + 0.25f * static_cast<float>(k));
    }
    for (std::size_t k = 0; k < pts.size(); ++k) maps.push_back({k % 3, pts[k], conf[k]});
  }
  std::vector<CanonicalViewBuilder> builders() const { return std::vector<CanonicalViewBuilder>(3, {h, w, s}); }
};

TEST(CanonicalViews, ImagesInParallelGiveTheSameViewsAsOneByOne) {
  const ThreeImages in;
  std::vector<CanonicalViewBuilder> serial = in.builders();
  for (const OwnFrameMaps& m : in.maps) serial[m.image].add(m.pts3d, m.conf);
  for (int threads : {1, 3, 8}) {
    std::vector<CanonicalViewBuilder> parallel = in.builders();
    sga::WorkerPool pool(threads);
    ASSERT_TRUE(add_predictions(parallel, in.maps, pool).is_ok());
    auto views = finish_canonical_views(parallel, pool);
    ASSERT_TRUE(views.is_ok()) << views.status().to_string();
    ASSERT_EQ(views->size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      auto want = serial[i].finish();
      ASSERT_TRUE(want.is_ok());
      EXPECT_EQ((*views)[i].predictions, want->predictions) << "image " << i;
      EXPECT_EQ((*views)[i].canon2, want->canon2) << "image " << i;  // bit for bit: the same sums in the same order
      EXPECT_EQ((*views)[i].conf, want->conf) << "image " << i;
      EXPECT_EQ((*views)[i].focal, want->focal) << "image " << i;
    }
  }
}

TEST(CanonicalViews, AnImageOutsideTheBuildersOrAFailedViewIsNamed) {
  const ThreeImages in;
  std::vector<CanonicalViewBuilder> builders = in.builders();
  std::vector<OwnFrameMaps> maps = in.maps;
  maps.back().image = 3;
  sga::WorkerPool pool(2);
  const Status outside = add_predictions(builders, maps, pool);
  EXPECT_EQ(outside.code(), StatusCode::kInvalidArgument);
  for (const CanonicalViewBuilder& b : builders) EXPECT_EQ(b.predictions(), 0) << "nothing added";
  maps.pop_back();
  maps.erase(maps.begin() + 1);  // image 1 keeps one prediction fewer; image 2 none after this
  maps.erase(std::remove_if(maps.begin(), maps.end(), [](const OwnFrameMaps& m) { return m.image == 2; }), maps.end());
  ASSERT_TRUE(add_predictions(builders, maps, pool).is_ok());
  auto views = finish_canonical_views(builders, pool);
  ASSERT_FALSE(views.is_ok());
  EXPECT_NE(views.status().message().find("canonical view of image 2"), std::string::npos) << views.status().message();
}

}  // namespace
}  // namespace recon::gpu
