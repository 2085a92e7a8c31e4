// The procedural test scene and the pose scoring: see synthetic_scene.h.
#include "tests/gpu/reconstruct/synthetic_scene.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <utility>

namespace recon::gpu::testing {

namespace {

using V3 = std::array<double, 3>;

V3 sub(const V3& a, const V3& b) {
  return {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
}
double dot(const V3& a, const V3& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
V3 cross(const V3& a, const V3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
V3 normalized(const V3& a) {
  const double n = std::sqrt(dot(a, a));
  return {a[0] / n, a[1] / n, a[2] / n};
}

struct Sphere {
  V3 centre;
  double radius;
};
constexpr V3 kRoomLo = {-6.0, -3.5, -6.0};
constexpr V3 kRoomHi = {6.0, 2.5, 7.0};
constexpr std::array<Sphere, 3> kSpheres = {{{{0.0, 0.4, 2.0}, 1.0}, {{-1.8, 1.3, 3.2}, 0.8}, {{1.7, 1.2, 1.0}, 0.7}}};
constexpr V3 kTarget = {0.0, 0.4, 2.0};

// Parameter t of the first hit along o + t d (t > 0; the origin is inside the room).
double cast(const V3& o, const V3& d) {
  double t = HUGE_VAL;
  for (int k = 0; k < 3; ++k) {
    if (std::abs(d[k]) < 1e-300) continue;
    const double t1 = (kRoomLo[k] - o[k]) / d[k], t2 = (kRoomHi[k] - o[k]) / d[k];
    t = std::min(t, std::max(t1, t2));
  }
  for (const Sphere& s : kSpheres) {
    const V3 oc = sub(o, s.centre);
    const double a = dot(d, d), b = 2 * dot(d, oc), c = dot(oc, oc) - s.radius * s.radius;
    const double disc = b * b - 4 * a * c;
    if (disc < 0) continue;
    const double hit = (-b - std::sqrt(disc)) / (2 * a);
    if (hit > 1e-9 && hit < t) t = hit;
  }
  return t;
}

V3 camera_ray_world(const SyntheticCamera& cam, double x, double y) {
  const V3 d = {(x - cam.width / 2.0) / cam.focal, (y - cam.height / 2.0) / cam.focal, 1.0};
  const auto& r = cam.rotation;
  return {r[0] * d[0] + r[1] * d[1] + r[2] * d[2], r[3] * d[0] + r[4] * d[1] + r[5] * d[2],
          r[6] * d[0] + r[7] * d[1] + r[8] * d[2]};
}

SyntheticCamera place_camera(const SceneOptions& o, int k, std::mt19937& rng) {
  std::uniform_real_distribution<double> jitter(-1.0, 1.0);
  SyntheticCamera cam;
  cam.width = o.width;
  cam.height = o.height;
  if (!o.sizes.empty()) {
    cam.width = o.sizes[static_cast<std::size_t>(k) % o.sizes.size()][0];
    cam.height = o.sizes[static_cast<std::size_t>(k) % o.sizes.size()][1];
  }
  cam.focal = o.focal * cam.width / o.width;
  const double span = o.arc_degrees * std::numbers::pi / 180.0;
  const double theta = o.num_cameras > 1 ? -span / 2 + span * k / (o.num_cameras - 1) : 0.0;
  const double dist = 4.5 + 0.3 * std::cos(1.3 * k);
  const double height = -0.6 + 0.25 * std::sin(1.7 * k);
  cam.centre = {kTarget[0] + dist * std::sin(theta), kTarget[1] + height, kTarget[2] - dist * std::cos(theta)};
  const V3 look = {kTarget[0] + 0.3 * jitter(rng), kTarget[1] + 0.2 * jitter(rng), kTarget[2] + 0.3 * jitter(rng)};
  const V3 z = normalized(sub(look, cam.centre));
  const V3 x0 = normalized(cross({0.0, 1.0, 0.0}, z));
  const V3 y0 = cross(z, x0);
  const double roll = 0.06 * jitter(rng);
  V3 x, y;
  for (int i = 0; i < 3; ++i) {
    x[i] = std::cos(roll) * x0[i] + std::sin(roll) * y0[i];
    y[i] = -std::sin(roll) * x0[i] + std::cos(roll) * y0[i];
  }
  for (int i = 0; i < 3; ++i) {
    const std::size_t row = 3 * static_cast<std::size_t>(i);
    cam.rotation[row] = x[i];
    cam.rotation[row + 1] = y[i];
    cam.rotation[row + 2] = z[i];
  }
  return cam;
}

// World point -> (u, v, z) in `cam`; visible means in front and not occluded.
bool project(const SyntheticCamera& cam, const V3& p, double& u, double& v, double& z) {
  const V3 d = sub(p, cam.centre);
  const auto& r = cam.rotation;
  const double q0 = r[0] * d[0] + r[3] * d[1] + r[6] * d[2];
  const double q1 = r[1] * d[0] + r[4] * d[1] + r[7] * d[2];
  z = r[2] * d[0] + r[5] * d[1] + r[8] * d[2];
  if (z < 1e-6) return false;
  u = cam.focal * q0 / z + cam.width / 2.0;
  v = cam.focal * q1 / z + cam.height / 2.0;
  const double t = cast(cam.centre, {d[0] / z, d[1] / z, d[2] / z});
  return t >= z * (1 - 1e-6);
}

}  // namespace

std::vector<double> exact_pointmap(const SyntheticCamera& cam) {
  std::vector<double> pts(static_cast<std::size_t>(cam.width) * cam.height * 3);
  for (int y = 0; y < cam.height; ++y) {
    for (int x = 0; x < cam.width; ++x) {
      const double z = cast(cam.centre, camera_ray_world(cam, x, y));
      const std::size_t p = static_cast<std::size_t>(y) * cam.width + x;
      pts[3 * p] = z * (x - cam.width / 2.0) / cam.focal;
      pts[3 * p + 1] = z * (y - cam.height / 2.0) / cam.focal;
      pts[3 * p + 2] = z;
    }
  }
  return pts;
}

SyntheticScene make_scene(const SceneOptions& o) {
  std::mt19937 rng(o.seed);
  SyntheticScene scene;
  for (int k = 0; k < o.num_cameras; ++k) scene.cameras.push_back(place_camera(o, k, rng));
  for (const auto& a : scene.cameras) {
    for (const auto& b : scene.cameras) {
      scene.camera_spread =
          std::max(scene.camera_spread, std::sqrt(dot(sub(a.centre, b.centre), sub(a.centre, b.centre))));
    }
  }
  std::vector<std::vector<double>> maps;
  for (const auto& cam : scene.cameras) maps.push_back(exact_pointmap(cam));

  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int a = 0; a < o.num_cameras; ++a) {
    for (int b = a + 1; b < o.num_cameras; ++b) {
      const SyntheticCamera& ca = scene.cameras[static_cast<std::size_t>(a)];
      const SyntheticCamera& cb = scene.cameras[static_cast<std::size_t>(b)];
      PairMatches pm;
      pm.image_a = a;
      pm.image_b = b;
      const int h = o.match_stride / 2;
      for (int y = h; y < ca.height; y += o.match_stride) {
        for (int x = h; x < ca.width; x += o.match_stride) {
          const std::size_t p = static_cast<std::size_t>(y) * ca.width + x;
          const std::vector<double>& m = maps[static_cast<std::size_t>(a)];
          const auto& r = ca.rotation;
          const V3 pc = {m[3 * p], m[3 * p + 1], m[3 * p + 2]};
          const V3 world = {r[0] * pc[0] + r[1] * pc[1] + r[2] * pc[2] + ca.centre[0],
                            r[3] * pc[0] + r[4] * pc[1] + r[5] * pc[2] + ca.centre[1],
                            r[6] * pc[0] + r[7] * pc[1] + r[8] * pc[2] + ca.centre[2]};
          double u = 0, v = 0, z = 0;
          if (!project(cb, world, u, v, z)) continue;
          if (o.match_noise_px > 0) {
            u += o.match_noise_px * normal(rng);
            v += o.match_noise_px * normal(rng);
          }
          const double ur = std::nearbyint(u), vr = std::nearbyint(v);
          if (ur < 0 || vr < 0 || ur > cb.width - 1 || vr > cb.height - 1) continue;
          pm.xy_a.push_back(x);
          pm.xy_a.push_back(y);
          pm.xy_b.push_back(static_cast<std::int32_t>(ur));
          pm.xy_b.push_back(static_cast<std::int32_t>(vr));
        }
      }
      std::size_t m = pm.xy_a.size() / 2;
      if (o.max_matches_per_pair > 0 && m > static_cast<std::size_t>(o.max_matches_per_pair)) {
        // A random subset, kept in grid order.
        std::vector<std::size_t> order(m);
        for (std::size_t k = 0; k < m; ++k) order[k] = k;
        std::shuffle(order.begin(), order.end(), rng);
        order.resize(static_cast<std::size_t>(o.max_matches_per_pair));
        std::sort(order.begin(), order.end());
        PairMatches sub_pm{a, b, {}, {}, {}};
        for (const std::size_t k : order) {
          sub_pm.xy_a.insert(sub_pm.xy_a.end(), {pm.xy_a[2 * k], pm.xy_a[2 * k + 1]});
          sub_pm.xy_b.insert(sub_pm.xy_b.end(), {pm.xy_b[2 * k], pm.xy_b[2 * k + 1]});
        }
        pm = std::move(sub_pm);
        m = order.size();
      }
      if (m < static_cast<std::size_t>(o.min_matches)) continue;
      for (std::size_t k = 0; k < m; ++k) {
        if (o.outlier_fraction > 0 && unit(rng) < o.outlier_fraction) {
          pm.xy_b[2 * k] = static_cast<std::int32_t>(unit(rng) * cb.width);
          pm.xy_b[2 * k + 1] = static_cast<std::int32_t>(unit(rng) * cb.height);
        }
        pm.conf.push_back(static_cast<float>(1.0 + 4.0 * unit(rng)));
      }
      scene.pairs.push_back(std::move(pm));
    }
  }

  // Own-frame predictions: one per neighbour (or one in all, when exact and asked to), streamed.
  std::vector<int> neighbours(static_cast<std::size_t>(o.num_cameras), 0);
  for (const PairMatches& pm : scene.pairs) {
    ++neighbours[static_cast<std::size_t>(pm.image_a)];
    ++neighbours[static_cast<std::size_t>(pm.image_b)];
  }
  for (int i = 0; i < o.num_cameras; ++i) {
    const SyntheticCamera& cam = scene.cameras[static_cast<std::size_t>(i)];
    CanonicalViewBuilder builder(cam.height, cam.width, o.subsample);
    const int count =
        o.exact_predictions_once && o.depth_noise == 0 ? 1 : std::max(1, neighbours[static_cast<std::size_t>(i)]);
    const std::vector<double>& exact = maps[static_cast<std::size_t>(i)];
    std::vector<float> pts(exact.size()), conf(exact.size() / 3);
    for (int k = 0; k < count; ++k) {
      for (std::size_t p = 0; p < conf.size(); ++p) {
        const double scale = o.depth_noise > 0 ? 1.0 + o.depth_noise * normal(rng) : 1.0;
        for (std::size_t c = 0; c < 3; ++c) pts[3 * p + c] = static_cast<float>(scale * exact[3 * p + c]);
        conf[p] = static_cast<float>(1.5 + 4.5 * unit(rng));
      }
      builder.add(pts, conf);
    }
    auto view = builder.finish();
    scene.views.push_back(std::move(view).value());
  }
  return scene;
}

namespace {

// Eigenvector of the largest eigenvalue of a symmetric 4x4 matrix (cyclic Jacobi).
std::array<double, 4> top_eigenvector(std::array<std::array<double, 4>, 4> a) {
  std::array<std::array<double, 4>, 4> v{};
  for (int i = 0; i < 4; ++i) v[i][i] = 1.0;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int p = 0; p < 4; ++p) {
      for (int q = p + 1; q < 4; ++q) off += a[p][q] * a[p][q];
    }
    if (off < 1e-30) break;
    for (int p = 0; p < 4; ++p) {
      for (int q = p + 1; q < 4; ++q) {
        if (std::abs(a[p][q]) < 1e-300) continue;
        const double theta = (a[q][q] - a[p][p]) / (2 * a[p][q]);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < 4; ++k) {
          const double akp = a[k][p], akq = a[k][q];
          a[k][p] = c * akp - s * akq;
          a[k][q] = s * akp + c * akq;
        }
        for (int k = 0; k < 4; ++k) {
          const double apk = a[p][k], aqk = a[q][k];
          a[p][k] = c * apk - s * aqk;
          a[q][k] = s * apk + c * aqk;
        }
        for (int k = 0; k < 4; ++k) {
          const double vkp = v[k][p], vkq = v[k][q];
          v[k][p] = c * vkp - s * vkq;
          v[k][q] = s * vkp + c * vkq;
        }
      }
    }
  }
  int best = 0;
  for (int i = 1; i < 4; ++i) {
    if (a[i][i] > a[best][best]) best = i;
  }
  return {v[0][best], v[1][best], v[2][best], v[3][best]};
}

}  // namespace

PoseErrors pose_errors(const std::vector<std::array<double, 16>>& cam_to_world,
                       const std::vector<SyntheticCamera>& truth) {
  const std::size_t n = truth.size();
  V3 ma{}, mb{};
  for (std::size_t i = 0; i < n; ++i) {
    for (int k = 0; k < 3; ++k) {
      ma[k] += cam_to_world[i][4 * k + 3] / n;
      mb[k] += truth[i].centre[k] / n;
    }
  }
  // Horn's closed form: the rotation taking the centred recovered centres onto the true ones.
  double s[3][3] = {};
  double norm_a = 0;
  std::vector<V3> a(n), b(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (int k = 0; k < 3; ++k) {
      a[i][k] = cam_to_world[i][4 * k + 3] - ma[k];
      b[i][k] = truth[i].centre[k] - mb[k];
    }
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) s[r][c] += a[i][r] * b[i][c];
    }
    norm_a += dot(a[i], a[i]);
  }
  const double sxx = s[0][0], sxy = s[0][1], sxz = s[0][2], syx = s[1][0], syy = s[1][1], syz = s[1][2];
  const double szx = s[2][0], szy = s[2][1], szz = s[2][2];
  const std::array<std::array<double, 4>, 4> nm = {{{sxx + syy + szz, syz - szy, szx - sxz, sxy - syx},
                                                    {syz - szy, sxx - syy - szz, sxy + syx, szx + sxz},
                                                    {szx - sxz, sxy + syx, -sxx + syy - szz, syz + szy},
                                                    {sxy - syx, szx + sxz, syz + szy, -sxx - syy + szz}}};
  const std::array<double, 4> q = top_eigenvector(nm);  // (w, x, y, z)
  const double w = q[0], x = q[1], y = q[2], z = q[3];
  const std::array<double, 9> r = {
      w * w + x * x - y * y - z * z, 2 * (x * y - w * z),           2 * (x * z + w * y),
      2 * (x * y + w * z),           w * w - x * x + y * y - z * z, 2 * (y * z - w * x),
      2 * (x * z - w * y),           2 * (y * z + w * x),           w * w - x * x - y * y + z * z};
  double sb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const V3 ra = {r[0] * a[i][0] + r[1] * a[i][1] + r[2] * a[i][2], r[3] * a[i][0] + r[4] * a[i][1] + r[5] * a[i][2],
                   r[6] * a[i][0] + r[7] * a[i][1] + r[8] * a[i][2]};
    sb += dot(ra, b[i]);
  }
  PoseErrors out;
  out.scale = sb / norm_a;
  double spread = 0;
  for (const auto& ci : truth) {
    for (const auto& cj : truth)
      spread = std::max(spread, std::sqrt(dot(sub(ci.centre, cj.centre), sub(ci.centre, cj.centre))));
  }
  for (std::size_t i = 0; i < n; ++i) {
    const V3 ra = {r[0] * a[i][0] + r[1] * a[i][1] + r[2] * a[i][2], r[3] * a[i][0] + r[4] * a[i][1] + r[5] * a[i][2],
                   r[6] * a[i][0] + r[7] * a[i][1] + r[8] * a[i][2]};
    const V3 d = {out.scale * ra[0] - b[i][0], out.scale * ra[1] - b[i][1], out.scale * ra[2] - b[i][2]};
    out.centre.push_back(std::sqrt(dot(d, d)) / spread);
    // Rotation error: angle of R_true^T (R_align R_recovered).
    std::array<double, 9> m{};
    const std::array<double, 16>& rec = cam_to_world[i];
    for (std::size_t rr = 0; rr < 3; ++rr) {
      for (std::size_t cc = 0; cc < 3; ++cc) {
        m[3 * rr + cc] = r[3 * rr] * rec[cc] + r[3 * rr + 1] * rec[4 + cc] + r[3 * rr + 2] * rec[8 + cc];
      }
    }
    double trace = 0;
    for (std::size_t k = 0; k < 9; ++k) trace += truth[i].rotation[k] * m[k];
    out.rotation_deg.push_back(std::acos(std::clamp((trace - 1) / 2, -1.0, 1.0)) * 180.0 / std::numbers::pi);
  }
  return out;
}

}  // namespace recon::gpu::testing
