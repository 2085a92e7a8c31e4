// The alignment losses and their per-match gradients: see match_losses.h.
//
// A match pixel (x, y) of image i becomes the world point (make_pts3d, SGA:513-539)
//   oo = 1 + off (f0 / f),  zz = D[anchor] oo,  p = zz ((x - cx) / f, (y - cy) / f, 1),  P = R p + C
// and is reprojected into image j (reproj2d, SGA:1015-1019) as
//   q = R_j^T (P - C_j),  zc = max(q_z, 1e-3),  u = clip((f_j q_x + cx_j q_z) / zc, -1000, 2000)  (same for v).
// Each kernel runs those lines forward, then backward with the chain rule by hand; the clips pass no
// gradient where they are active, like torch's clamp.
#include "gpu/reconstruct/match_losses.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

namespace recon::gpu::sga {

namespace {

std::size_t idx(int i) {
  return static_cast<std::size_t>(i);
}

// A camera's per-iteration values, copied once per segment into registers-friendly locals.
struct CamView {
  double r[9];
  double c[3];
  double f, inv_f, cx, cy, f0_over_f;
  const double* depth;
};

CamView view_of(const SceneState& state, int i) {
  const CameraState& s = state.cameras[idx(i)];
  CamView v{};
  for (int k = 0; k < 9; ++k) v.r[k] = s.rotation[idx(k)];
  for (int k = 0; k < 3; ++k) v.c[k] = s.centre[idx(k)];
  v.f = s.focal;
  v.inv_f = s.inv_focal;
  v.cx = s.cx;
  v.cy = s.cy;
  v.f0_over_f = s.f0_over_f;
  v.depth = state.depth[idx(i)].data();
  return v;
}

struct Acc {
  double rotation[9];
  double centre[3];
  double focal, cx, cy;
};

// The kernels work on kLanes matches at a time, one per lane, written as short loops over the lanes
// so that the compiler can map them onto vector instructions. Each lane keeps its own accumulators;
// they are summed in lane order at the end of a segment, so the result stays deterministic.
constexpr int kLanes = 4;

// The world points of kLanes match pixels of one camera, and what their backward pass needs.
struct Points {
  double wx[kLanes], wy[kLanes], wz[kLanes];  // P = R p + C
  double px[kLanes], py[kLanes], pz[kLanes];  // p = zz * ray (pz = zz)
  double rx[kLanes], ry[kLanes], oo[kLanes], depth[kLanes];
};

// Per-lane gradient accumulators of one camera.
struct LaneAcc {
  double rotation[9][kLanes];
  double centre[3][kLanes];
  double focal[kLanes], cx[kLanes], cy[kLanes];
};

// One set of matches' inputs for one side, as pointers to kLanes consecutive entries.
struct SideIn {
  const double* x;
  const double* y;
  const double* off;
  const std::int32_t* anchor;
};

[[gnu::always_inline]] inline void make_points(const CamView& c, const SideIn& in, Points& p) {
  for (int l = 0; l < kLanes; ++l) p.depth[l] = c.depth[in.anchor[l]];
  for (int l = 0; l < kLanes; ++l) {
    p.rx[l] = (in.x[l] - c.cx) * c.inv_f;
    p.ry[l] = (in.y[l] - c.cy) * c.inv_f;
    p.oo[l] = 1.0 + in.off[l] * c.f0_over_f;
    const double zz = p.depth[l] * p.oo[l];
    p.px[l] = zz * p.rx[l];
    p.py[l] = zz * p.ry[l];
    p.pz[l] = zz;
    p.wx[l] = c.r[0] * p.px[l] + c.r[1] * p.py[l] + c.r[2] * p.pz[l] + c.c[0];
    p.wy[l] = c.r[3] * p.px[l] + c.r[4] * p.py[l] + c.r[5] * p.pz[l] + c.c[1];
    p.wz[l] = c.r[6] * p.px[l] + c.r[7] * p.py[l] + c.r[8] * p.pz[l] + c.c[2];
  }
}

// Backward of make_points for d loss / d P = g; writes d loss / d D[anchor] to gd.
[[gnu::always_inline]] inline void points_backward(const CamView& c, const Points& p, const double* gx,
                                                   const double* gy, const double* gz, double* gd, LaneAcc& acc) {
  for (int l = 0; l < kLanes; ++l) {
    acc.rotation[0][l] += gx[l] * p.px[l];
    acc.rotation[1][l] += gx[l] * p.py[l];
    acc.rotation[2][l] += gx[l] * p.pz[l];
    acc.rotation[3][l] += gy[l] * p.px[l];
    acc.rotation[4][l] += gy[l] * p.py[l];
    acc.rotation[5][l] += gy[l] * p.pz[l];
    acc.rotation[6][l] += gz[l] * p.px[l];
    acc.rotation[7][l] += gz[l] * p.py[l];
    acc.rotation[8][l] += gz[l] * p.pz[l];
    acc.centre[0][l] += gx[l];
    acc.centre[1][l] += gy[l];
    acc.centre[2][l] += gz[l];
    const double gp0 = c.r[0] * gx[l] + c.r[3] * gy[l] + c.r[6] * gz[l];
    const double gp1 = c.r[1] * gx[l] + c.r[4] * gy[l] + c.r[7] * gz[l];
    const double gp2 = c.r[2] * gx[l] + c.r[5] * gy[l] + c.r[8] * gz[l];
    const double g_zz = gp0 * p.rx[l] + gp1 * p.ry[l] + gp2;
    acc.cx[l] -= gp0 * p.pz[l] * c.inv_f;
    acc.cy[l] -= gp1 * p.pz[l] * c.inv_f;
    // d ray / d f = -ray / f and d oo / d f = -(oo - 1) / f.
    acc.focal[l] -= ((gp0 * p.px[l] + gp1 * p.py[l]) + g_zz * p.depth[l] * (p.oo[l] - 1.0)) * c.inv_f;
    gd[l] = g_zz * p.oo[l];
  }
}

struct Projections {
  double vx[kLanes], vy[kLanes], vz[kLanes];  // P - C
  double q0[kLanes], q1[kLanes], q2[kLanes];  // camera coordinates
  double inv_z[kLanes], u[kLanes], w[kLanes], e0[kLanes], e1[kLanes];
  bool z_free[kLanes], u_free[kLanes], w_free[kLanes];  // the clip is inactive
};

// Reprojects world points into camera c; r = distance to the target pixels (tx, ty).
[[gnu::always_inline]] inline void project(const CamView& c, const Points& p, const double* tx, const double* ty,
                                           Projections& pr, double* r) {
  for (int l = 0; l < kLanes; ++l) {
    pr.vx[l] = p.wx[l] - c.c[0];
    pr.vy[l] = p.wy[l] - c.c[1];
    pr.vz[l] = p.wz[l] - c.c[2];
    pr.q0[l] = c.r[0] * pr.vx[l] + c.r[3] * pr.vy[l] + c.r[6] * pr.vz[l];
    pr.q1[l] = c.r[1] * pr.vx[l] + c.r[4] * pr.vy[l] + c.r[7] * pr.vz[l];
    pr.q2[l] = c.r[2] * pr.vx[l] + c.r[5] * pr.vy[l] + c.r[8] * pr.vz[l];
    pr.z_free[l] = !(pr.q2[l] < 1e-3);
    pr.inv_z[l] = 1.0 / (pr.z_free[l] ? pr.q2[l] : 1e-3);
    pr.u[l] = (c.f * pr.q0[l] + c.cx * pr.q2[l]) * pr.inv_z[l];
    pr.w[l] = (c.f * pr.q1[l] + c.cy * pr.q2[l]) * pr.inv_z[l];
    pr.u_free[l] = pr.u[l] >= -1000.0 && pr.u[l] <= 2000.0;
    pr.w_free[l] = pr.w[l] >= -1000.0 && pr.w[l] <= 2000.0;
    const double u = pr.u[l] < -1000.0 ? -1000.0 : (pr.u[l] > 2000.0 ? 2000.0 : pr.u[l]);
    const double w = pr.w[l] < -1000.0 ? -1000.0 : (pr.w[l] > 2000.0 ? 2000.0 : pr.w[l]);
    pr.e0[l] = tx[l] - u;
    pr.e1[l] = ty[l] - w;
    r[l] = std::sqrt(pr.e0[l] * pr.e0[l] + pr.e1[l] * pr.e1[l]);
  }
}

// Backward of project() for d loss / d r = s r; adds d loss / d P to g.
[[gnu::always_inline]] inline void project_backward(const CamView& c, const Projections& pr, const double* s,
                                                    LaneAcc& acc, double* gx, double* gy, double* gz) {
  for (int l = 0; l < kLanes; ++l) {
    const double g_u = pr.u_free[l] ? -s[l] * pr.e0[l] : 0.0;
    const double g_w = pr.w_free[l] ? -s[l] * pr.e1[l] : 0.0;
    const double iz = pr.inv_z[l];
    acc.focal[l] += (g_u * pr.q0[l] + g_w * pr.q1[l]) * iz;
    acc.cx[l] += g_u * pr.q2[l] * iz;
    acc.cy[l] += g_w * pr.q2[l] * iz;
    const double gq0 = g_u * c.f * iz;
    const double gq1 = g_w * c.f * iz;
    // With zc = q_z, d u / d q_z = (cx - u) / q_z; with the clip active, cx / zc.
    const double gq2 = (g_u * c.cx + g_w * c.cy) * iz - (pr.z_free[l] ? (g_u * pr.u[l] + g_w * pr.w[l]) * iz : 0.0);
    acc.rotation[0][l] += pr.vx[l] * gq0;
    acc.rotation[1][l] += pr.vx[l] * gq1;
    acc.rotation[2][l] += pr.vx[l] * gq2;
    acc.rotation[3][l] += pr.vy[l] * gq0;
    acc.rotation[4][l] += pr.vy[l] * gq1;
    acc.rotation[5][l] += pr.vy[l] * gq2;
    acc.rotation[6][l] += pr.vz[l] * gq0;
    acc.rotation[7][l] += pr.vz[l] * gq1;
    acc.rotation[8][l] += pr.vz[l] * gq2;
    const double gv0 = c.r[0] * gq0 + c.r[1] * gq1 + c.r[2] * gq2;
    const double gv1 = c.r[3] * gq0 + c.r[4] * gq1 + c.r[5] * gq2;
    const double gv2 = c.r[6] * gq0 + c.r[7] * gq1 + c.r[8] * gq2;
    acc.centre[0][l] -= gv0;
    acc.centre[1][l] -= gv1;
    acc.centre[2][l] -= gv2;
    gx[l] += gv0;
    gy[l] += gv1;
    gz[l] += gv2;
  }
}

// rho(r) and rho'(r) / r (0 at r = 0: torch's norm has gradient 0 there), with one division.
template <RobustLoss::Kind kRho>
[[gnu::always_inline]] inline void rho_slope(const RobustLoss& rho, const double* r, double* value,
                                             double* slope_over_r) {
  for (int l = 0; l < kLanes; ++l) {
    if constexpr (kRho == RobustLoss::Kind::kDistance) {
      value[l] = r[l];
      slope_over_r[l] = r[l] > 0 ? 1.0 / r[l] : 0.0;
    } else if constexpr (kRho == RobustLoss::Kind::kGamma15) {
      const double s = std::sqrt(r[l] + rho.offset);
      value[l] = (r[l] + rho.offset) * s - rho.offset_pow;
      slope_over_r[l] = r[l] > 0 ? 1.5 * s / r[l] : 0.0;
    } else if constexpr (kRho == RobustLoss::Kind::kGamma05) {
      const double s = std::sqrt(r[l] + rho.offset);
      value[l] = s - rho.offset_pow;
      slope_over_r[l] = r[l] > 0 ? 0.5 / (s * r[l]) : 0.0;
    } else {
      value[l] = std::pow(r[l] + rho.offset, rho.gamma) - rho.offset_pow;
      slope_over_r[l] = r[l] > 0 ? rho.gamma * std::pow(r[l] + rho.offset, rho.gamma - 1.0) / r[l] : 0.0;
    }
  }
}

// kLanes matches: their loss terms (added to loss[]) and, with kGrad, their gradients.
template <LossKind kKind, RobustLoss::Kind kRho, bool kGrad>
[[gnu::always_inline]] inline void run_block(const CamView& ca, const CamView& cb, const SideIn& a, const SideIn& b,
                                             const double* conf, const RobustLoss& rho, double grad_scale, double* gd_a,
                                             double* gd_b, LaneAcc& acc_a, LaneAcc& acc_b, double* loss) {
  Points pa, pb;
  make_points(ca, a, pa);
  make_points(cb, b, pb);
  if constexpr (kKind == LossKind::kPoints3d) {
    double dx[kLanes], dy[kLanes], dz[kLanes], r[kLanes], value[kLanes], slope[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      dx[l] = pa.wx[l] - pb.wx[l];
      dy[l] = pa.wy[l] - pb.wy[l];
      dz[l] = pa.wz[l] - pb.wz[l];
      r[l] = std::sqrt(dx[l] * dx[l] + dy[l] * dy[l] + dz[l] * dz[l]);
    }
    rho_slope<kRho>(rho, r, value, slope);
    for (int l = 0; l < kLanes; ++l) loss[l] += conf[l] * value[l];
    if constexpr (kGrad) {
      double gax[kLanes], gay[kLanes], gaz[kLanes], gbx[kLanes], gby[kLanes], gbz[kLanes];
      for (int l = 0; l < kLanes; ++l) {
        const double s = conf[l] * grad_scale * slope[l];
        gax[l] = s * dx[l];
        gay[l] = s * dy[l];
        gaz[l] = s * dz[l];
        gbx[l] = -gax[l];
        gby[l] = -gay[l];
        gbz[l] = -gaz[l];
      }
      points_backward(ca, pa, gax, gay, gaz, gd_a, acc_a);
      points_backward(cb, pb, gbx, gby, gbz, gd_b, acc_b);
    }
  } else {
    Projections in_a, in_b;
    double r_a[kLanes], r_b[kLanes], value_a[kLanes], value_b[kLanes], slope_a[kLanes], slope_b[kLanes];
    project(ca, pb, a.x, a.y, in_a, r_a);  // b's point seen by a
    project(cb, pa, b.x, b.y, in_b, r_b);  // a's point seen by b
    rho_slope<kRho>(rho, r_a, value_a, slope_a);
    rho_slope<kRho>(rho, r_b, value_b, slope_b);
    for (int l = 0; l < kLanes; ++l) loss[l] += conf[l] * value_a[l] + conf[l] * value_b[l];
    if constexpr (kGrad) {
      double s_a[kLanes], s_b[kLanes];
      double gax[kLanes] = {}, gay[kLanes] = {}, gaz[kLanes] = {}, gbx[kLanes] = {}, gby[kLanes] = {}, gbz[kLanes] = {};
      for (int l = 0; l < kLanes; ++l) {
        s_a[l] = conf[l] * grad_scale * slope_a[l];
        s_b[l] = conf[l] * grad_scale * slope_b[l];
      }
      project_backward(ca, in_a, s_a, acc_a, gbx, gby, gbz);
      project_backward(cb, in_b, s_b, acc_b, gax, gay, gaz);
      points_backward(ca, pa, gax, gay, gaz, gd_a, acc_a);
      points_backward(cb, pb, gbx, gby, gbz, gd_b, acc_b);
    }
  }
}

void reduce_lanes(const LaneAcc& lanes, Acc& out) {
  for (int l = 0; l < kLanes; ++l) {
    for (int k = 0; k < 9; ++k) out.rotation[k] += lanes.rotation[k][l];
    for (int k = 0; k < 3; ++k) out.centre[k] += lanes.centre[k][l];
    out.focal += lanes.focal[l];
    out.cx += lanes.cx[l];
    out.cy += lanes.cy[l];
  }
}

template <LossKind kKind, RobustLoss::Kind kRho, bool kGrad>
double run_segment(const PairSoA& pr, int begin, int end, const CamView& ca, const CamView& cb, const RobustLoss& rho,
                   double grad_scale, double* gd_a, double* gd_b, Acc& acc_a, Acc& acc_b) {
  LaneAcc lanes_a{}, lanes_b{};
  double loss[kLanes] = {};
  int m = begin;
  for (; m + kLanes <= end; m += kLanes) {
    const auto k = idx(m);
    const SideIn a{pr.xa.data() + k, pr.ya.data() + k, pr.offa.data() + k, pr.anchor_a.data() + k};
    const SideIn b{pr.xb.data() + k, pr.yb.data() + k, pr.offb.data() + k, pr.anchor_b.data() + k};
    run_block<kKind, kRho, kGrad>(ca, cb, a, b, pr.conf.data() + k, rho, grad_scale, gd_a + k, gd_b + k, lanes_a,
                                  lanes_b, loss);
  }
  if (m < end) {
    // The tail: padded with copies of the last match at confidence 0, which contribute nothing.
    double xa[kLanes], ya[kLanes], offa[kLanes], xb[kLanes], yb[kLanes], offb[kLanes], conf[kLanes];
    std::int32_t anchor_a[kLanes], anchor_b[kLanes];
    double tail_gd_a[kLanes], tail_gd_b[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      const auto k = idx(std::min(m + l, end - 1));
      xa[l] = pr.xa[k];
      ya[l] = pr.ya[k];
      offa[l] = pr.offa[k];
      anchor_a[l] = pr.anchor_a[k];
      xb[l] = pr.xb[k];
      yb[l] = pr.yb[k];
      offb[l] = pr.offb[k];
      anchor_b[l] = pr.anchor_b[k];
      conf[l] = m + l < end ? pr.conf[k] : 0.0;
    }
    run_block<kKind, kRho, kGrad>(ca, cb, SideIn{xa, ya, offa, anchor_a}, SideIn{xb, yb, offb, anchor_b}, conf, rho,
                                  grad_scale, tail_gd_a, tail_gd_b, lanes_a, lanes_b, loss);
    if constexpr (kGrad) {
      for (int l = 0; m + l < end; ++l) {
        gd_a[m + l] = tail_gd_a[l];
        gd_b[m + l] = tail_gd_b[l];
      }
    }
  }
  reduce_lanes(lanes_a, acc_a);
  reduce_lanes(lanes_b, acc_b);
  double total = 0.0;
  for (int l = 0; l < kLanes; ++l) total += loss[l];
  return total;
}

template <LossKind kKind, bool kGrad>
double run_segment_for(const RobustLoss& rho, const PairSoA& pr, int begin, int end, const CamView& ca,
                       const CamView& cb, double grad_scale, double* gd_a, double* gd_b, Acc& acc_a, Acc& acc_b) {
  switch (rho.kind) {
    case RobustLoss::Kind::kDistance:
      return run_segment<kKind, RobustLoss::Kind::kDistance, kGrad>(pr, begin, end, ca, cb, rho, grad_scale, gd_a, gd_b,
                                                                    acc_a, acc_b);
    case RobustLoss::Kind::kGamma15:
      return run_segment<kKind, RobustLoss::Kind::kGamma15, kGrad>(pr, begin, end, ca, cb, rho, grad_scale, gd_a, gd_b,
                                                                   acc_a, acc_b);
    case RobustLoss::Kind::kGamma05:
      return run_segment<kKind, RobustLoss::Kind::kGamma05, kGrad>(pr, begin, end, ca, cb, rho, grad_scale, gd_a, gd_b,
                                                                   acc_a, acc_b);
    case RobustLoss::Kind::kGamma:
      break;
  }
  return run_segment<kKind, RobustLoss::Kind::kGamma, kGrad>(pr, begin, end, ca, cb, rho, grad_scale, gd_a, gd_b, acc_a,
                                                             acc_b);
}

}  // namespace

void MatchSet::finalize(int num_images) {
  segments.clear();
  sides.assign(idx(num_images), {});
  conf_sum = 0.0;
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    const PairSoA& pr = pairs[p];
    for (int begin = 0; begin < pr.size(); begin += kSegmentSize) {
      segments.push_back(Segment{static_cast<int>(p), begin, std::min(pr.size(), begin + kSegmentSize)});
    }
    sides[idx(pr.image_a)].emplace_back(static_cast<int>(p), 0);
    sides[idx(pr.image_b)].emplace_back(static_cast<int>(p), 1);
    for (const double c : pr.conf) conf_sum += c;
  }
}

RobustLoss RobustLoss::gamma_loss(double gamma) {
  RobustLoss l;
  l.gamma = gamma;
  l.offset = std::pow(1.0 / gamma, 1.0 / (gamma - 1.0));  // slope 1 at r = 0
  l.offset_pow = std::pow(l.offset, gamma);
  l.kind = gamma == 1.5 ? Kind::kGamma15 : (gamma == 0.5 ? Kind::kGamma05 : Kind::kGamma);
  return l;
}

LossEvaluator::LossEvaluator(const MatchSet& matches, int num_images, std::span<const int> num_anchors)
    : matches_(matches),
      segments_(matches.segments.size()),
      camera_grads_(idx(num_images)),
      depth_grads_(idx(num_images)) {
  gd_a_.resize(matches.pairs.size());
  gd_b_.resize(matches.pairs.size());
  for (std::size_t p = 0; p < matches.pairs.size(); ++p) {
    gd_a_[p].assign(idx(matches.pairs[p].size()), 0.0);
    gd_b_[p].assign(idx(matches.pairs[p].size()), 0.0);
  }
  for (int i = 0; i < num_images; ++i) depth_grads_[idx(i)].assign(idx(num_anchors[idx(i)]), 0.0);
}

double LossEvaluator::evaluate(LossKind kind, const RobustLoss& rho, const SceneState& state, WorkerPool& pool,
                               bool want_grad) {
  const double norm = kind == LossKind::kPoints3d ? matches_.conf_sum : 2.0 * matches_.conf_sum;
  const double grad_scale = 1.0 / norm;
  pool.run(static_cast<int>(matches_.segments.size()), [&](int task) {
    const MatchSet::Segment& seg = matches_.segments[idx(task)];
    const PairSoA& pr = matches_.pairs[idx(seg.pair)];
    const CamView ca = view_of(state, pr.image_a);
    const CamView cb = view_of(state, pr.image_b);
    Acc acc_a{}, acc_b{};
    double* gd_a = gd_a_[idx(seg.pair)].data();
    double* gd_b = gd_b_[idx(seg.pair)].data();
    double loss = 0.0;
    if (kind == LossKind::kPoints3d) {
      loss = want_grad ? run_segment_for<LossKind::kPoints3d, true>(rho, pr, seg.begin, seg.end, ca, cb, grad_scale,
                                                                    gd_a, gd_b, acc_a, acc_b)
                       : run_segment_for<LossKind::kPoints3d, false>(rho, pr, seg.begin, seg.end, ca, cb, grad_scale,
                                                                     gd_a, gd_b, acc_a, acc_b);
    } else {
      loss = want_grad ? run_segment_for<LossKind::kReprojection2d, true>(rho, pr, seg.begin, seg.end, ca, cb,
                                                                          grad_scale, gd_a, gd_b, acc_a, acc_b)
                       : run_segment_for<LossKind::kReprojection2d, false>(rho, pr, seg.begin, seg.end, ca, cb,
                                                                           grad_scale, gd_a, gd_b, acc_a, acc_b);
    }
    SegmentResult& out = segments_[idx(task)];
    out.loss = loss;
    std::memcpy(&out.a, &acc_a, sizeof(Acc));
    std::memcpy(&out.b, &acc_b, sizeof(Acc));
  });
  static_assert(sizeof(Acc) == sizeof(SideGrad));

  double loss_sum = 0.0;
  for (const SegmentResult& s : segments_) loss_sum += s.loss;
  if (!want_grad) return loss_sum / norm;

  for (CameraGrad& g : camera_grads_) g = CameraGrad{};
  const auto add = [](CameraGrad& g, const SideGrad& s) {
    for (int k = 0; k < 9; ++k) g.rotation[idx(k)] += s.rotation[k];
    for (int k = 0; k < 3; ++k) g.centre[idx(k)] += s.centre[k];
    g.focal += s.focal;
    g.cx += s.cx;
    g.cy += s.cy;
  };
  for (std::size_t t = 0; t < segments_.size(); ++t) {
    const PairSoA& pr = matches_.pairs[idx(matches_.segments[t].pair)];
    add(camera_grads_[idx(pr.image_a)], segments_[t].a);
    add(camera_grads_[idx(pr.image_b)], segments_[t].b);
  }
  // Anchor-depth gradients: one task per image, scattering its matches in pair order.
  pool.run(static_cast<int>(depth_grads_.size()), [&](int i) {
    std::vector<double>& g = depth_grads_[idx(i)];
    std::fill(g.begin(), g.end(), 0.0);
    for (const auto& [p, side] : matches_.sides[idx(i)]) {
      const PairSoA& pr = matches_.pairs[idx(p)];
      const std::int32_t* anchors = side == 0 ? pr.anchor_a.data() : pr.anchor_b.data();
      const double* gd = side == 0 ? gd_a_[idx(p)].data() : gd_b_[idx(p)].data();
      for (int m = 0; m < pr.size(); ++m) g[idx(anchors[m])] += gd[m];
    }
  });
  return loss_sum / norm;
}

}  // namespace recon::gpu::sga
