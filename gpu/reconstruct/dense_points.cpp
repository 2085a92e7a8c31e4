// Dense points and clean_pointcloud: see dense_points.h.
#include "gpu/reconstruct/dense_points.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>

#include "gpu/reconstruct/worker_pool.h"

namespace recon::gpu {

namespace {

std::size_t idx(int i) {
  return static_cast<std::size_t>(i);
}

struct DenseDouble {
  std::vector<double> points, depth, conf;
};

bool consistent(const SceneAlignment& scene, std::span<const CanonicalView> views) {
  if (scene.cameras.size() != views.size() || scene.anchor_depth.size() != views.size() ||
      scene.component.size() != views.size()) {
    return false;
  }
  for (std::size_t i = 0; i < views.size(); ++i) {
    const CanonicalView& v = views[i];
    const AlignedCamera& c = scene.cameras[i];
    const std::size_t n = idx(v.height) * idx(v.width);
    if (c.width != v.width || c.height != v.height || v.subsample <= 0 || v.height % v.subsample != 0 ||
        v.width % v.subsample != 0 || v.canon2.size() != n || v.conf.size() != n ||
        scene.anchor_depth[i].size() != idx(v.anchors_x() * v.anchors_y()) || !(c.focal > 0)) {
      return false;
    }
  }
  return true;
}

// make_pts3d over every pixel: z = D[anchor] (1 + (canon2[p] / canon2[anchor] - 1) f0 / f).
void place_image(const AlignedCamera& cam, const std::vector<double>& anchor_depth, const CanonicalView& v,
                 DenseDouble& out) {
  const int s = v.subsample;
  const std::size_t n = idx(v.height) * idx(v.width);
  out.points.resize(3 * n);
  out.depth.resize(n);
  out.conf.assign(v.conf.begin(), v.conf.end());
  const std::array<double, 16>& m = cam.cam_to_world;
  const double f0_over_f = v.focal / cam.focal;
  for (int y = 0; y < v.height; ++y) {
    for (int x = 0; x < v.width; ++x) {
      const std::size_t p = idx(y) * idx(v.width) + idx(x);
      const int bx = x / s, by = y / s;
      const double anchor_canon2 = v.canon2[idx(by * s + s / 2) * idx(v.width) + idx(bx * s + s / 2)];
      const double offset = v.canon2[p] / anchor_canon2;
      const double z = anchor_depth[idx(by * v.anchors_x() + bx)] * (1.0 + (offset - 1.0) * f0_over_f);
      const double cam_pt[3] = {z * ((x - cam.cx) / cam.focal), z * ((y - cam.cy) / cam.focal), z};
      for (int k = 0; k < 3; ++k) {
        out.points[3 * p + idx(k)] = m[idx(4 * k)] * cam_pt[0] + m[idx(4 * k + 1)] * cam_pt[1] +
                                     m[idx(4 * k + 2)] * cam_pt[2] + m[idx(4 * k + 3)];
      }
      out.depth[p] = z;
    }
  }
}

// clean_pointcloud(tol=0.001, bad_conf=0): image i against every other image j of its component, i in
// order; later comparisons see confidences already lowered, as in the official (in place on copies).
void clean(const SceneAlignment& scene, std::span<const CanonicalView> views, std::vector<DenseDouble>& dense,
           sga::WorkerPool& pool) {
  constexpr double kTol = 0.001;
  const int n = static_cast<int>(views.size());
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j || scene.component[idx(i)] != scene.component[idx(j)]) continue;
      const AlignedCamera& cj = scene.cameras[idx(j)];
      const double* m = cj.cam_to_world.data();
      const int wj = views[idx(j)].width, hj = views[idx(j)].height;
      const std::vector<double>& depth_j = dense[idx(j)].depth;
      const std::vector<double>& conf_j = dense[idx(j)].conf;
      DenseDouble& di = dense[idx(i)];
      const int rows = views[idx(i)].height, cols = views[idx(i)].width;
      pool.run(rows, [&](int y) {
        for (int x = 0; x < cols; ++x) {
          const std::size_t p = idx(y) * idx(cols) + idx(x);
          const double v[3] = {di.points[3 * p] - m[3], di.points[3 * p + 1] - m[7], di.points[3 * p + 2] - m[11]};
          const double q0 = m[0] * v[0] + m[4] * v[1] + m[8] * v[2];
          const double q1 = m[1] * v[0] + m[5] * v[1] + m[9] * v[2];
          const double q2 = m[2] * v[0] + m[6] * v[1] + m[10] * v[2];
          if (!(q2 > 0)) continue;
          // torch.round: half to even, which nearbyint does in the default rounding mode.
          const double u = std::nearbyint((cj.focal * q0 + cj.cx * q2) / q2);
          const double w = std::nearbyint((cj.focal * q1 + cj.cy * q2) / q2);
          if (!(u >= 0 && u < wj && w >= 0 && w < hj)) continue;
          const std::size_t pj = static_cast<std::size_t>(w) * idx(wj) + static_cast<std::size_t>(u);
          if (q2 < (1.0 - kTol) * depth_j[pj] && di.conf[p] < conf_j[pj]) di.conf[p] = std::min(di.conf[p], 0.0);
        }
      });
    }
  }
}

}  // namespace

std::vector<DenseImage> dense_points(const SceneAlignment& scene, std::span<const CanonicalView> views,
                                     bool clean_depth, int threads) {
  if (!consistent(scene, views)) return {};
  std::vector<DenseDouble> dense(views.size());
  sga::WorkerPool pool(threads);
  pool.run(static_cast<int>(views.size()), [&](int i) {
    place_image(scene.cameras[idx(i)], scene.anchor_depth[idx(i)], views[idx(i)], dense[idx(i)]);
  });
  if (clean_depth) clean(scene, views, dense, pool);
  std::vector<DenseImage> out(views.size());
  for (std::size_t i = 0; i < views.size(); ++i) {
    out[i].points.assign(dense[i].points.begin(), dense[i].points.end());
    out[i].depth.assign(dense[i].depth.begin(), dense[i].depth.end());
    out[i].conf.assign(dense[i].conf.begin(), dense[i].conf.end());
  }
  return out;
}

}  // namespace recon::gpu
