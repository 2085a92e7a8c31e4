// The sparse alignment's stages as Ceres problems: see ceres_alignment_problem.h.
//
// The functors run scene_params.cpp's forward pass for one camera (with the global scaling 1) and
// match_losses.cpp's lines for one match, on ceres::Jet for the derivatives:
//   f = clip(exp(lf)), size = exp(ls), z = size med f / f0, off = z (W/f (0.5 - ppx), H/f (0.5 - ppy), 1)
//   C = t - R off, D = z + (chat - 1) med size, P = R (D (1 + o f0 / f)) ((x - cx) / f, (y - cy) / f, 1) + C
//   q = R_j^T (P - C_j), u = clip((f_j q_x + cx_j q_z) / max(q_z, 1e-3), -1000, 2000)
#include "bench/reconstruct/ceres_alignment_problem.h"

#include <ceres/ceres.h>
#include <ceres/manifold.h>
#include <ceres/rotation.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <memory>

namespace recon::bench {

namespace {

using gpu::sga::ImageConstants;
using gpu::sga::MatchSet;
using gpu::sga::PairSoA;
using gpu::sga::SceneModel;
using gpu::sga::Stage;

std::size_t idx(int i) {
  return static_cast<std::size_t>(i);
}

// One side of one match: its pixel and its relative-depth offset (PairSoA's x, y, off).
struct Side {
  double x = 0, y = 0, off = 0;
};

template <typename T>
struct Camera {
  T r[9];  // cam-to-world, row-major
  T c[3];  // centre
  T f, cx, cy, f0_over_f, z, med_size;
};

// gpu::sga::quat_to_rotation on T (a unit quaternion, XYZW).
template <typename T>
void rotation_of(const T* q, T* r) {
  const T x = q[0], y = q[1], z = q[2], w = q[3];
  const T xx = x * x, yy = y * y, zz = z * z, ww = w * w;
  const T xy = x * y, xz = x * z, yz = y * z, xw = x * w, yw = y * w, zw = z * w;
  r[0] = xx - yy - zz + ww;
  r[1] = 2.0 * (xy - zw);
  r[2] = 2.0 * (xz + yw);
  r[3] = 2.0 * (xy + zw);
  r[4] = -xx + yy - zz + ww;
  r[5] = 2.0 * (yz - xw);
  r[6] = 2.0 * (xz - yw);
  r[7] = 2.0 * (yz + xw);
  r[8] = -xx - yy + zz + ww;
}

template <typename T>
Camera<T> camera(const T* q, const T* t, const T& log_size, const T& log_focal, const T& ppx, const T& ppy,
                 const ImageConstants& im) {
  using std::exp;
  Camera<T> c;
  c.f = exp(log_focal);
  if (c.f < T(im.min_focal)) c.f = T(im.min_focal);  // the clip passes no gradient, like torch's clamp
  if (c.f > T(im.max_focal)) c.f = T(im.max_focal);
  const T size = exp(log_size);
  c.z = size * im.median_depth * c.f / im.base_focal;
  c.med_size = im.median_depth * size;
  c.cx = ppx * static_cast<double>(im.width);
  c.cy = ppy * static_cast<double>(im.height);
  c.f0_over_f = im.base_focal / c.f;
  rotation_of(q, c.r);
  const T off[3] = {c.z * (static_cast<double>(im.width) / c.f * (0.5 - ppx)),
                    c.z * (static_cast<double>(im.height) / c.f * (0.5 - ppy)), c.z};
  for (int k = 0; k < 3; ++k) c.c[k] = t[k] - (c.r[3 * k] * off[0] + c.r[3 * k + 1] * off[1] + c.r[3 * k + 2] * off[2]);
  return c;
}

template <typename T>
void world_point(const Camera<T>& c, const T& chat, const Side& s, T* p) {
  const T depth = c.z + (chat - 1.0) * c.med_size;
  const T zz = depth * (1.0 + s.off * c.f0_over_f);
  const T px = zz * ((s.x - c.cx) / c.f);
  const T py = zz * ((s.y - c.cy) / c.f);
  for (int k = 0; k < 3; ++k) p[k] = c.r[3 * k] * px + c.r[3 * k + 1] * py + c.r[3 * k + 2] * zz + c.c[k];
}

template <typename T>
void pixel_error(const Camera<T>& c, const T* p, const Side& target, T* e) {
  const T v[3] = {p[0] - c.c[0], p[1] - c.c[1], p[2] - c.c[2]};
  const T q0 = c.r[0] * v[0] + c.r[3] * v[1] + c.r[6] * v[2];
  const T q1 = c.r[1] * v[0] + c.r[4] * v[1] + c.r[7] * v[2];
  const T q2 = c.r[2] * v[0] + c.r[5] * v[1] + c.r[8] * v[2];
  const T zc = q2 < T(1e-3) ? T(1e-3) : q2;
  T u = (c.f * q0 + c.cx * q2) / zc;
  T w = (c.f * q1 + c.cy * q2) / zc;
  if (u < T(-1000.0)) u = T(-1000.0);
  if (u > T(2000.0)) u = T(2000.0);
  if (w < T(-1000.0)) w = T(-1000.0);
  if (w > T(2000.0)) w = T(2000.0);
  e[0] = target.x - u;
  e[1] = target.y - w;
}

// The coarse stage's residual: both images' world points of one match. Intrinsics and anchor depths
// are not trained in this stage; they are the functor's constants.
struct Points3d {
  const ImageConstants* image_a;
  const ImageConstants* image_b;
  Side a, b;
  double intrinsics_a[3], intrinsics_b[3];
  double chat_a, chat_b;

  template <typename T>
  bool operator()(const T* qa, const T* ta, const T* lsa, const T* qb, const T* tb, const T* lsb, T* r) const {
    const Camera<T> ca = camera(qa, ta, lsa[0], T(intrinsics_a[0]), T(intrinsics_a[1]), T(intrinsics_a[2]), *image_a);
    const Camera<T> cb = camera(qb, tb, lsb[0], T(intrinsics_b[0]), T(intrinsics_b[1]), T(intrinsics_b[2]), *image_b);
    T pa[3], pb[3];
    world_point(ca, T(chat_a), a, pa);
    world_point(cb, T(chat_b), b, pb);
    for (int k = 0; k < 3; ++k) r[k] = pa[k] - pb[k];
    return true;
  }
};

// The fine stage's residual for one direction of one match: the other side's point seen by the
// observing image, minus the observed pixel.
struct Reprojection2d {
  const ImageConstants* image_a;
  const ImageConstants* image_b;
  Side a, b;
  bool into_a;  // b's point seen by a (else a's point seen by b)

  template <typename T>
  bool operator()(const T* qa, const T* ta, const T* lsa, const T* ka, const T* da, const T* qb, const T* tb,
                  const T* lsb, const T* kb, const T* db, T* r) const {
    const Camera<T> ca = camera(qa, ta, lsa[0], ka[0], ka[1], ka[2], *image_a);
    const Camera<T> cb = camera(qb, tb, lsb[0], kb[0], kb[1], kb[2], *image_b);
    T p[3];
    if (into_a) {
      world_point(cb, db[0], b, p);
      pixel_error(ca, p, a, r);
    } else {
      world_point(ca, da[0], a, p);
      pixel_error(cb, p, b, r);
    }
    return true;
  }
};

// rho(s) = 2 w ((sqrt(s) + o)^gamma - o^gamma): Ceres's 1/2 rho is w times recon's gamma loss of the
// residual's norm. rho' and rho'' are finite only for s > 0; a norm below kMinNorm is taken as
// kMinNorm for them (the loss's slope at 0 is 1, like |r|'s).
class GammaLoss final : public ceres::LossFunction {
 public:
  GammaLoss(const gpu::sga::RobustLoss& rho, double weight)
      : gamma_(rho.gamma), offset_(rho.offset), offset_pow_(rho.offset_pow), weight_(weight) {}

  void Evaluate(double s, double out[3]) const override {
    constexpr double kMinNorm = 1e-9;
    const double norm = std::sqrt(s);
    out[0] = 2.0 * weight_ * (std::pow(norm + offset_, gamma_) - offset_pow_);
    const double r = std::max(norm, kMinNorm);
    const double a = r + offset_;
    const double a_gm1 = std::pow(a, gamma_ - 1.0);
    out[1] = weight_ * gamma_ * a_gm1 / r;  // d rho / ds = 2 w gamma a^(gamma-1) / (2 r)
    out[2] = weight_ * gamma_ * ((gamma_ - 1.0) * a_gm1 / a / r - a_gm1 / (r * r)) / (2.0 * r);
  }

 private:
  double gamma_, offset_, offset_pow_, weight_;
};

ceres::LinearSolverType linear_solver(const std::string& name) {
  if (name == "sparse_schur") return ceres::SPARSE_SCHUR;
  if (name == "iterative_schur") return ceres::ITERATIVE_SCHUR;
  if (name == "dense_schur") return ceres::DENSE_SCHUR;
  return ceres::SPARSE_NORMAL_CHOLESKY;
}

Side side_a(const PairSoA& p, int m) {
  return {p.xa[idx(m)], p.ya[idx(m)], p.offa[idx(m)]};
}

Side side_b(const PairSoA& p, int m) {
  return {p.xb[idx(m)], p.yb[idx(m)], p.offb[idx(m)]};
}

// A 3x3 row-major rotation -> unit quaternion XYZW.
std::array<double, 4> quat_of(const gpu::sga::Mat3& r) {
  double wxyz[4];
  ceres::RotationMatrixToQuaternion(ceres::RowMajorAdapter3x3(r.data()), wxyz);
  const double norm = std::sqrt(wxyz[0] * wxyz[0] + wxyz[1] * wxyz[1] + wxyz[2] * wxyz[2] + wxyz[3] * wxyz[3]);
  return {wxyz[1] / norm, wxyz[2] / norm, wxyz[3] / norm, wxyz[0] / norm};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

AbsoluteScene to_absolute(const SceneModel& model, std::span<const double> x) {
  const gpu::sga::ParamLayout& layout = model.layout;
  gpu::sga::SceneState state;
  gpu::sga::forward_scene(model, x, state);
  const double gs = state.global_scaling;
  AbsoluteScene scene;
  for (int i = 0; i < layout.num_images(); ++i) {
    const gpu::sga::CameraState& c = state.cameras[idx(i)];
    AbsoluteCamera cam;
    cam.quat = quat_of(c.rotation);
    for (int k = 0; k < 3; ++k) cam.trans[idx(k)] = gs * c.chain_translation[idx(k)];
    cam.log_size = x[idx(layout.log_size(i))] + std::log(gs);
    cam.intrinsics = {x[idx(layout.log_focal(i))], x[idx(layout.pp(i))], x[idx(layout.pp(i) + 1)]};
    scene.cameras.push_back(cam);
    const double* depth = &x[idx(layout.depth(i))];
    scene.depth.emplace_back(depth, depth + layout.num_depths(i));
  }
  return scene;
}

std::vector<double> to_relative(const SceneModel& model, const AbsoluteScene& scene) {
  const gpu::sga::ParamLayout& layout = model.layout;
  std::vector<double> x(idx(layout.size()), 0.0);
  std::vector<gpu::sga::Mat3> rotation;
  for (const AbsoluteCamera& c : scene.cameras) rotation.push_back(gpu::sga::quat_to_rotation(c.quat));
  const auto put = [&](int i, const gpu::sga::Mat3& local, const gpu::sga::Vec3& t) {
    const std::array<double, 4> q = quat_of(local);
    for (int k = 0; k < 4; ++k) x[idx(layout.quat(i) + k)] = q[idx(k)];
    for (int k = 0; k < 3; ++k) x[idx(layout.trans(i) + k)] = t[idx(k)];
  };
  const int root = model.tree.root;
  put(root, rotation[idx(root)], scene.cameras[idx(root)].trans);
  for (const auto& [p, c] : model.tree.edges) {
    const gpu::sga::Mat3& rp = rotation[idx(p)];
    const gpu::sga::Mat3& rc = rotation[idx(c)];
    gpu::sga::Mat3 local{};
    gpu::sga::Vec3 t{};
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        for (int k = 0; k < 3; ++k) local[idx(3 * i + j)] += rp[idx(3 * k + i)] * rc[idx(3 * k + j)];  // Rp^T Rc
      }
      for (int k = 0; k < 3; ++k) {
        t[idx(i)] += rp[idx(3 * k + i)] * (scene.cameras[idx(c)].trans[idx(k)] - scene.cameras[idx(p)].trans[idx(k)]);
      }
    }
    put(c, local, t);
  }
  for (int i = 0; i < layout.num_images(); ++i) {
    const AbsoluteCamera& c = scene.cameras[idx(i)];
    x[idx(layout.log_size(i))] = c.log_size;
    x[idx(layout.log_focal(i))] = c.intrinsics[0];
    x[idx(layout.pp(i))] = c.intrinsics[1];
    x[idx(layout.pp(i) + 1)] = c.intrinsics[2];
    for (int a = 0; a < layout.num_depths(i); ++a) x[idx(layout.depth(i) + a)] = scene.depth[idx(i)][idx(a)];
  }
  return x;
}

CeresStageReport solve_stage(const SceneModel& model, const MatchSet& matches, Stage stage, AbsoluteScene& scene,
                             const CeresStageOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const bool coarse = stage == Stage::kCoarse;
  const int n = model.layout.num_images();
  const int root = model.tree.root;
  // The start inside the bounds (a size of exactly 1 may come back from to_absolute as 1 - 1 ulp).
  if (coarse) {
    for (AbsoluteCamera& c : scene.cameras) c.log_size = std::max(c.log_size, 0.0);
  }

  ceres::Problem problem;
  ceres::Manifold* quaternion = new ceres::EigenQuaternionManifold;  // the problem owns it
  for (int i = 0; i < n; ++i) {
    AbsoluteCamera& c = scene.cameras[idx(i)];
    problem.AddParameterBlock(c.quat.data(), 4, quaternion);
    problem.AddParameterBlock(c.trans.data(), 3);
    problem.AddParameterBlock(&c.log_size, 1);
    if (!coarse) problem.AddParameterBlock(c.intrinsics.data(), 3);
  }
  const gpu::sga::RobustLoss rho = gpu::sga::stage_loss(stage);
  const double norm = coarse ? matches.conf_sum : 2.0 * matches.conf_sum;
  CeresStageReport report;
  for (const PairSoA& p : matches.pairs) {
    AbsoluteCamera& ca = scene.cameras[idx(p.image_a)];
    AbsoluteCamera& cb = scene.cameras[idx(p.image_b)];
    const ImageConstants* ia = &model.images[idx(p.image_a)];
    const ImageConstants* ib = &model.images[idx(p.image_b)];
    std::vector<double>& depth_a = scene.depth[idx(p.image_a)];
    std::vector<double>& depth_b = scene.depth[idx(p.image_b)];
    for (int m = 0; m < p.size(); ++m) {
      const double weight = p.conf[idx(m)] / norm;
      if (!(weight > 0)) continue;  // adds nothing to the loss
      double* da = &depth_a[idx(p.anchor_a[idx(m)])];
      double* db = &depth_b[idx(p.anchor_b[idx(m)])];
      if (coarse) {
        auto* functor = new Points3d{ia, ib, side_a(p, m), side_b(p, m), {}, {}, *da, *db};
        std::copy(ca.intrinsics.begin(), ca.intrinsics.end(), functor->intrinsics_a);
        std::copy(cb.intrinsics.begin(), cb.intrinsics.end(), functor->intrinsics_b);
        problem.AddResidualBlock(new ceres::AutoDiffCostFunction<Points3d, 3, 4, 3, 1, 4, 3, 1>(functor),
                                 new GammaLoss(rho, weight), ca.quat.data(), ca.trans.data(), &ca.log_size,
                                 cb.quat.data(), cb.trans.data(), &cb.log_size);
        ++report.residual_blocks;
      } else {
        for (const bool into_a : {true, false}) {
          auto* functor = new Reprojection2d{ia, ib, side_a(p, m), side_b(p, m), into_a};
          problem.AddResidualBlock(
              new ceres::AutoDiffCostFunction<Reprojection2d, 2, 4, 3, 1, 3, 1, 4, 3, 1, 3, 1>(functor),
              new GammaLoss(rho, weight), ca.quat.data(), ca.trans.data(), &ca.log_size, ca.intrinsics.data(), da,
              cb.quat.data(), cb.trans.data(), &cb.log_size, cb.intrinsics.data(), db);
          ++report.residual_blocks;
        }
      }
    }
  }
  // Gauge: the root's pose (and, in the scale-free fine stage, its size) is held.
  problem.SetParameterBlockConstant(scene.cameras[idx(root)].quat.data());
  problem.SetParameterBlockConstant(scene.cameras[idx(root)].trans.data());
  for (int i = 0; i < n; ++i) {
    AbsoluteCamera& c = scene.cameras[idx(i)];
    // The focal's clip stays in the functor, as in recon (no gradient outside the range): Ceres's
    // bounds would cost a projected line search (about 2x the time per iteration).
    if (coarse) {
      problem.SetParameterLowerBound(&c.log_size, 0, 0.0);
    } else if (i == root) {
      problem.SetParameterBlockConstant(&c.log_size);
    }
  }
  report.parameters = problem.NumParameters();
  report.build_seconds = seconds_since(start);

  ceres::Solver::Options so;
  so.minimizer_type = ceres::TRUST_REGION;
  so.trust_region_strategy_type = ceres::LEVENBERG_MARQUARDT;
  so.linear_solver_type = coarse ? ceres::SPARSE_NORMAL_CHOLESKY : linear_solver(options.linear_solver);
  so.max_num_iterations = options.max_iterations;
  so.num_threads = options.threads;
  so.minimizer_progress_to_stdout = options.verbose;
  so.logging_type = options.verbose ? ceres::PER_MINIMIZER_ITERATION : ceres::SILENT;
  ceres::Solver::Summary summary;
  ceres::Solve(so, &problem, &summary);
  if (options.verbose) std::fprintf(stderr, "%s\n", summary.FullReport().c_str());
  report.seconds = seconds_since(start);
  report.iterations = static_cast<int>(summary.iterations.size()) - 1;  // the first entry is the start
  report.successful = summary.num_successful_steps;
  report.initial_cost = summary.initial_cost;
  report.final_cost = summary.final_cost;
  report.termination = summary.termination_type == ceres::CONVERGENCE      ? "convergence"
                       : summary.termination_type == ceres::NO_CONVERGENCE ? "max_iterations"
                                                                           : summary.message;
  return report;
}

std::vector<double> reprojection_errors(const SceneModel& model, const MatchSet& matches, const AbsoluteScene& scene) {
  std::vector<double> out;
  for (const PairSoA& p : matches.pairs) {
    const AbsoluteCamera& a = scene.cameras[idx(p.image_a)];
    const AbsoluteCamera& b = scene.cameras[idx(p.image_b)];
    const Camera<double> ca = camera(a.quat.data(), a.trans.data(), a.log_size, a.intrinsics[0], a.intrinsics[1],
                                     a.intrinsics[2], model.images[idx(p.image_a)]);
    const Camera<double> cb = camera(b.quat.data(), b.trans.data(), b.log_size, b.intrinsics[0], b.intrinsics[1],
                                     b.intrinsics[2], model.images[idx(p.image_b)]);
    for (int m = 0; m < p.size(); ++m) {
      double pa[3], pb[3], e[2];
      world_point(ca, scene.depth[idx(p.image_a)][idx(p.anchor_a[idx(m)])], side_a(p, m), pa);
      world_point(cb, scene.depth[idx(p.image_b)][idx(p.anchor_b[idx(m)])], side_b(p, m), pb);
      pixel_error(ca, pb, side_a(p, m), e);
      out.push_back(std::hypot(e[0], e[1]));
      pixel_error(cb, pa, side_b(p, m), e);
      out.push_back(std::hypot(e[0], e[1]));
    }
  }
  return out;
}

}  // namespace recon::bench
