// Accuracy against the ground truth: see alignment_metrics.h.
#include "bench/reconstruct/alignment_metrics.h"

#include <Eigen/Dense>
#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numbers>

namespace recon::bench {

namespace {

std::size_t idx(int i) {
  return static_cast<std::size_t>(i);
}

Eigen::Matrix3d rotation_of(const std::array<double, 16>& m) {
  Eigen::Matrix3d r;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) r(i, j) = m[idx(4 * i + j)];
  }
  return r;
}

Eigen::Vector3d centre_of(const std::array<double, 16>& m) {
  return {m[3], m[7], m[11]};
}

double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  const std::size_t k = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  const double upper = v[k];
  if (v.size() % 2 != 0) return upper;
  return 0.5 * (upper + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k)));
}

}  // namespace

PoseErrors pose_errors(std::span<const std::array<double, 16>> estimated, std::span<const double> estimated_focal,
                       std::span<const std::array<double, 16>> truth, std::span<const double> true_focal) {
  const auto n = static_cast<Eigen::Index>(estimated.size());
  Eigen::Matrix3Xd src(3, n), dst(3, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    src.col(i) = centre_of(estimated[static_cast<std::size_t>(i)]);
    dst.col(i) = centre_of(truth[static_cast<std::size_t>(i)]);
  }
  const Eigen::Matrix4d sim = Eigen::umeyama(src, dst, true);
  const Eigen::Matrix3d sr = sim.topLeftCorner<3, 3>();
  // The rotations get their own fit (the chordal mean of R_true R_est^T): a sweep's centres lie near
  // a line, which leaves the centres' rotation about it loosely determined.
  Eigen::Matrix3d sum = Eigen::Matrix3d::Zero();
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    sum += rotation_of(truth[k]) * rotation_of(estimated[k]).transpose();
  }
  const Eigen::JacobiSVD<Eigen::Matrix3d> svd(sum, Eigen::ComputeFullU | Eigen::ComputeFullV);
  Eigen::Matrix3d d = Eigen::Matrix3d::Identity();
  d(2, 2) = (svd.matrixU() * svd.matrixV().transpose()).determinant() < 0 ? -1.0 : 1.0;
  const Eigen::Matrix3d align = svd.matrixU() * d * svd.matrixV().transpose();
  const double scene_size = (dst.rowwise().maxCoeff() - dst.rowwise().minCoeff()).norm();
  std::vector<double> rot, centre, focal;
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const Eigen::Matrix3d diff = rotation_of(truth[k]).transpose() * align * rotation_of(estimated[k]);
    const double cos_angle = std::clamp((diff.trace() - 1.0) / 2.0, -1.0, 1.0);
    rot.push_back(std::acos(cos_angle) * 180.0 / std::numbers::pi);
    const Eigen::Vector3d moved = sr * src.col(i) + sim.topRightCorner<3, 1>();
    centre.push_back(100.0 * (moved - dst.col(i)).norm() / scene_size);
    focal.push_back(100.0 * std::abs(estimated_focal[k] - true_focal[k]) / true_focal[k]);
  }
  PoseErrors e;
  e.rotation_deg_median = median_of(rot);
  e.rotation_deg_max = *std::max_element(rot.begin(), rot.end());
  e.centre_pct_median = median_of(centre);
  e.centre_pct_max = *std::max_element(centre.begin(), centre.end());
  e.focal_pct_median = median_of(focal);
  e.focal_pct_max = *std::max_element(focal.begin(), focal.end());
  return e;
}

std::vector<char> true_inliers(const gpu::sga::MatchSet& matches, std::span<const int> images,
                               std::span<const std::array<double, 16>> truth, std::span<const double> true_focal,
                               std::span<const int> width, std::span<const int> height, double threshold_px) {
  std::vector<char> out;
  const auto intrinsics = [&](int i) {
    Eigen::Matrix3d k = Eigen::Matrix3d::Identity();
    k(0, 0) = k(1, 1) = true_focal[idx(i)];
    k(0, 2) = width[idx(i)] / 2.0;
    k(1, 2) = height[idx(i)] / 2.0;
    return k;
  };
  for (const gpu::sga::PairSoA& p : matches.pairs) {
    const int a = images[idx(p.image_a)], b = images[idx(p.image_b)];
    // x_b^T F x_a = 0 with F = K_b^-T [t]x R K_a^-1, R = R_b^T R_a, t = R_b^T (C_a - C_b).
    const Eigen::Matrix3d ra = rotation_of(truth[idx(a)]), rb = rotation_of(truth[idx(b)]);
    const Eigen::Matrix3d r = rb.transpose() * ra;
    const Eigen::Vector3d t = rb.transpose() * (centre_of(truth[idx(a)]) - centre_of(truth[idx(b)]));
    Eigen::Matrix3d tx;
    tx << 0, -t.z(), t.y(), t.z(), 0, -t.x(), -t.y(), t.x(), 0;
    const Eigen::Matrix3d f = intrinsics(b).inverse().transpose() * tx * r * intrinsics(a).inverse();
    for (int m = 0; m < p.size(); ++m) {
      const Eigen::Vector3d xa(p.xa[idx(m)], p.ya[idx(m)], 1.0), xb(p.xb[idx(m)], p.yb[idx(m)], 1.0);
      const Eigen::Vector3d la = f * xa, lb = f.transpose() * xb;
      const double num = std::abs(xb.dot(la));
      const double da = num / std::hypot(lb.x(), lb.y()), db = num / std::hypot(la.x(), la.y());
      out.push_back(da < threshold_px && db < threshold_px ? 1 : 0);
    }
  }
  return out;
}

Summary summarize(std::span<const double> values, std::span<const char> mask) {
  const std::size_t per = mask.empty() ? 1 : values.size() / mask.size();
  std::vector<double> kept;
  double sum = 0;
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (!mask.empty() && mask[k / per] == 0) continue;
    kept.push_back(values[k]);
    sum += values[k];
  }
  Summary s;
  s.count = static_cast<long long>(kept.size());
  s.mean = kept.empty() ? NAN : sum / static_cast<double>(kept.size());
  s.median = median_of(std::move(kept));
  return s;
}

}  // namespace recon::bench
