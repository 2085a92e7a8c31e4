// The sparse alignment's parametrisation and its backward pass: see scene_params.h.
//
// Forward (per image i, p = parent in the tree, SGA:269-321):
//   f = clip(exp(lf), fmin, fmax), (cx, cy) = pp * (W, H), size = exp(ls), gs = 1 / min_j size_j
//   z = size * med * f / f0                              camera-to-focal-plane distance
//   L = R(q / |q|), T_i = T_p [L | t]                    relative poses composed along the tree
//   off = z * (W/f (0.5 - ppx), H/f (0.5 - ppy), 1)      focal-plane point in camera coordinates
//   cam2w = [R_T | gs (t_T - R_T off)]
//   D[a] = gs (z + (chat[a] - 1) med size)               anchor z-depths ('add' mode)
// Backward runs these lines in reverse; where the official has a clip, the gradient is zero outside
// the range (torch's clamp), and min() shares its gradient evenly between tied sizes (torch's min()
// backward), which matters at the start where every size is 1.
#include "gpu/reconstruct/scene_params.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace recon::gpu::sga {

namespace {

std::size_t idx(int i) {
  return static_cast<std::size_t>(i);
}

Mat3 mul(const Mat3& a, const Mat3& b) {
  Mat3 r{};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      r[idx(3 * i + j)] =
          a[idx(3 * i)] * b[idx(j)] + a[idx(3 * i + 1)] * b[idx(3 + j)] + a[idx(3 * i + 2)] * b[idx(6 + j)];
    }
  }
  return r;
}

Vec3 mul(const Mat3& a, const Vec3& v) {
  return {a[0] * v[0] + a[1] * v[1] + a[2] * v[2], a[3] * v[0] + a[4] * v[1] + a[5] * v[2],
          a[6] * v[0] + a[7] * v[1] + a[8] * v[2]};
}

Vec3 mul_transposed(const Mat3& a, const Vec3& v) {
  return {a[0] * v[0] + a[3] * v[1] + a[6] * v[2], a[1] * v[0] + a[4] * v[1] + a[7] * v[2],
          a[2] * v[0] + a[5] * v[1] + a[8] * v[2]};
}

// a^T b
Mat3 mul_at_b(const Mat3& a, const Mat3& b) {
  Mat3 r{};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      r[idx(3 * i + j)] = a[idx(i)] * b[idx(j)] + a[idx(3 + i)] * b[idx(3 + j)] + a[idx(6 + i)] * b[idx(6 + j)];
    }
  }
  return r;
}

// a b^T
Mat3 mul_a_bt(const Mat3& a, const Mat3& b) {
  Mat3 r{};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      r[idx(3 * i + j)] =
          a[idx(3 * i)] * b[idx(3 * j)] + a[idx(3 * i + 1)] * b[idx(3 * j + 1)] + a[idx(3 * i + 2)] * b[idx(3 * j + 2)];
    }
  }
  return r;
}

// d loss / d q for R = quat_to_rotation(q), given G = d loss / d R (the polynomial's own derivative).
std::array<double, 4> rotation_grad_to_quat(const std::array<double, 4>& q, const Mat3& g) {
  const double x = q[0], y = q[1], z = q[2], w = q[3];
  return {
      2 * (g[0] * x + g[1] * y + g[2] * z + g[3] * y - g[4] * x - g[5] * w + g[6] * z + g[7] * w - g[8] * x),
      2 * (-g[0] * y + g[1] * x + g[2] * w + g[3] * x + g[4] * y + g[5] * z - g[6] * w + g[7] * z - g[8] * y),
      2 * (-g[0] * z - g[1] * w + g[2] * x + g[3] * w - g[4] * z + g[5] * y + g[6] * x + g[7] * y + g[8] * z),
      2 * (g[0] * w - g[1] * z + g[2] * y + g[3] * z + g[4] * w - g[5] * x - g[6] * y + g[7] * x + g[8] * w),
  };
}

constexpr double kNormalizeEps = 1e-12;  // F.normalize's eps

}  // namespace

ParamLayout::ParamLayout(std::span<const ImageConstants> images, bool shared_intrinsics)
    : n_(static_cast<int>(images.size())), shared_(shared_intrinsics) {
  int offset = 8 * n_ + 3 * num_focals();
  for (const ImageConstants& im : images) {
    depth_offset_.push_back(offset);
    depth_count_.push_back(im.num_anchors());
    offset += im.num_anchors();
  }
  total_ = offset;
}

std::vector<int> ParamLayout::trainable(Stage stage, bool opt_depth) const {
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(total_));
  for (int k = 0; k < 8 * n_; ++k) out.push_back(k);  // quats, trans, log sizes
  if (stage == Stage::kFine) {
    for (int k = 8 * n_; k < 8 * n_ + 3 * num_focals(); ++k) out.push_back(k);  // log focals, pps
    if (opt_depth) {
      for (int k = 8 * n_ + 3 * num_focals(); k < total_; ++k) out.push_back(k);
    }
  }
  return out;
}

Mat3 quat_to_rotation(const std::array<double, 4>& q) {
  const double x = q[0], y = q[1], z = q[2], w = q[3];
  const double xx = x * x, yy = y * y, zz = z * z, ww = w * w;
  const double xy = x * y, xz = x * z, yz = y * z, xw = x * w, yw = y * w, zw = z * w;
  return {xx - yy - zz + ww, 2 * (xy - zw),      2 * (xz + yw),  //
          2 * (xy + zw),     -xx + yy - zz + ww, 2 * (yz - xw),  //
          2 * (xz - yw),     2 * (yz + xw),      -xx - yy + zz + ww};
}

void normalize_quaternions(const ParamLayout& layout, std::span<double> x) {
  for (int i = 0; i < layout.num_images(); ++i) {
    double* q = &x[idx(layout.quat(i))];
    const double norm = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int k = 0; k < 4; ++k) q[k] /= norm;
  }
}

std::vector<double> initial_parameters(const SceneModel& model, std::span<const std::vector<double>> anchor_depths,
                                       std::span<const double> mean_confidence) {
  const ParamLayout& layout = model.layout;
  const int n = layout.num_images();
  std::vector<double> x(idx(layout.size()), 0.0);
  for (int i = 0; i < n; ++i) {
    const ImageConstants& im = model.images[idx(i)];
    x[idx(layout.quat(i) + 3)] = 1.0;
    const double* depth = anchor_depths[idx(i)].data();
    for (int a = 0; a < layout.num_depths(i); ++a) x[idx(layout.depth(i) + a)] = depth[a] / im.median_depth;
  }
  if (layout.shared_intrinsics()) {
    double conf_sum = 0.0;
    for (int i = 0; i < n; ++i) conf_sum += mean_confidence[idx(i)];
    double focal = 0.0, ppx = 0.0, ppy = 0.0;
    for (int i = 0; i < n; ++i) {
      const ImageConstants& im = model.images[idx(i)];
      const double w = mean_confidence[idx(i)] / conf_sum;
      focal += w * im.base_focal;
      ppx += w * ((im.width / 2.0) / im.width);
      ppy += w * ((im.height / 2.0) / im.height);
    }
    x[idx(layout.log_focal(0))] = std::log(focal);
    x[idx(layout.pp(0))] = ppx;
    x[idx(layout.pp(0) + 1)] = ppy;
  } else {
    for (int i = 0; i < n; ++i) {
      const ImageConstants& im = model.images[idx(i)];
      x[idx(layout.log_focal(i))] = std::log(im.base_focal);
      x[idx(layout.pp(i))] = (im.width / 2.0) / im.width;
      x[idx(layout.pp(i) + 1)] = (im.height / 2.0) / im.height;
    }
  }
  return x;
}

// Runs fn(i) for every image, on the pool if there is one.
template <typename Fn>
void for_each_image(int n, WorkerPool* pool, Fn&& fn) {
  if (pool != nullptr) {
    pool->run(n, fn);
  } else {
    for (int i = 0; i < n; ++i) fn(i);
  }
}

void forward_scene(const SceneModel& model, std::span<const double> x, SceneState& state, WorkerPool* pool) {
  const ParamLayout& layout = model.layout;
  const int n = layout.num_images();
  state.cameras.resize(idx(n));
  state.depth.resize(idx(n));
  double min_size = HUGE_VAL;
  for (int i = 0; i < n; ++i) {
    const ImageConstants& im = model.images[idx(i)];
    CameraState& c = state.cameras[idx(i)];
    const double raw_focal = std::exp(x[idx(layout.log_focal(i))]);
    c.focal_in_range = raw_focal >= im.min_focal && raw_focal <= im.max_focal;
    c.focal = raw_focal < im.min_focal ? im.min_focal : (raw_focal > im.max_focal ? im.max_focal : raw_focal);
    c.cx = x[idx(layout.pp(i))] * im.width;
    c.cy = x[idx(layout.pp(i) + 1)] * im.height;
    c.inv_focal = 1.0 / c.focal;
    c.f0_over_f = im.base_focal / c.focal;
    c.size = std::exp(x[idx(layout.log_size(i))]);
    min_size = std::min(min_size, c.size);
    c.z_camera = c.size * im.median_depth * c.focal / im.base_focal;
    std::array<double, 4> q{};
    for (int k = 0; k < 4; ++k) q[idx(k)] = x[idx(layout.quat(i) + k)];
    c.quat_norm = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    const double denom = std::max(c.quat_norm, kNormalizeEps);
    for (int k = 0; k < 4; ++k) c.quat_unit[idx(k)] = q[idx(k)] / denom;
    c.local_rotation = quat_to_rotation(c.quat_unit);
  }
  state.global_scaling = 1.0 / min_size;

  // Compose the relative poses along the tree; parents come before children in the edge list.
  const auto trans_of = [&](int i) {
    const double* t = &x[idx(layout.trans(i))];
    return Vec3{t[0], t[1], t[2]};
  };
  CameraState& root = state.cameras[idx(model.tree.root)];
  root.rotation = root.local_rotation;
  root.chain_translation = trans_of(model.tree.root);
  for (const auto& [p, c] : model.tree.edges) {
    const CameraState& parent = state.cameras[idx(p)];
    CameraState& child = state.cameras[idx(c)];
    child.rotation = mul(parent.rotation, child.local_rotation);
    const Vec3 moved = mul(parent.rotation, trans_of(c));
    for (int k = 0; k < 3; ++k) child.chain_translation[idx(k)] = moved[idx(k)] + parent.chain_translation[idx(k)];
  }

  const double gs = state.global_scaling;
  for_each_image(n, pool, [&](int i) {
    const ImageConstants& im = model.images[idx(i)];
    CameraState& c = state.cameras[idx(i)];
    const double ppx = x[idx(layout.pp(i))], ppy = x[idx(layout.pp(i) + 1)];
    c.offset = {c.z_camera * (im.width / c.focal * (0.5 - ppx)), c.z_camera * (im.height / c.focal * (0.5 - ppy)),
                c.z_camera};
    const Vec3 r_off = mul(c.rotation, c.offset);
    for (int k = 0; k < 3; ++k) c.centre[idx(k)] = gs * (c.chain_translation[idx(k)] - r_off[idx(k)]);
    std::vector<double>& depth = state.depth[idx(i)];
    depth.resize(idx(layout.num_depths(i)));
    const double med_size = im.median_depth * c.size;
    const double* chat = &x[idx(layout.depth(i))];
    for (std::size_t a = 0; a < depth.size(); ++a) depth[a] = gs * (c.z_camera + (chat[a] - 1.0) * med_size);
  });
}

void backward_scene(const SceneModel& model, std::span<const double> x, const SceneState& state,
                    std::span<const CameraGrad> camera_grads, std::span<const std::vector<double>> depth_grads,
                    std::span<double> grad, BackwardScratch& scratch, WorkerPool* pool) {
  const ParamLayout& layout = model.layout;
  const int n = layout.num_images();
  std::fill(grad.begin(), grad.end(), 0.0);
  const double gs = state.global_scaling;
  std::vector<Mat3>& g_rot = scratch.g_rot;      // d loss / d composed rotation
  std::vector<Vec3>& g_chain = scratch.g_chain;  // d loss / d composed translation
  std::vector<double>& g_size = scratch.g_size;
  g_rot.assign(idx(n), Mat3{});
  g_chain.assign(idx(n), Vec3{});
  g_size.assign(idx(n), 0.0);
  double g_gs = 0.0;

  // The anchor depths, per image: their own gradient and three sums for the camera quantities.
  std::vector<double>& depth_sums = scratch.depth_sums;
  depth_sums.assign(idx(3 * n), 0.0);
  for_each_image(n, pool, [&](int i) {
    const ImageConstants& im = model.images[idx(i)];
    const CameraState& c = state.cameras[idx(i)];
    const double med_size = im.median_depth * c.size;
    const double* chat = &x[idx(layout.depth(i))];
    const std::vector<double>& gd = depth_grads[idx(i)];
    double sum_gd = 0.0, sum_gd_chat = 0.0, sum_gd_inner = 0.0;
    for (int a = 0; a < layout.num_depths(i); ++a) {
      const double g = gd[idx(a)];
      grad[idx(layout.depth(i) + a)] = g * gs * med_size;
      sum_gd += g;
      sum_gd_chat += g * (chat[a] - 1.0);
      sum_gd_inner += g * (c.z_camera + (chat[a] - 1.0) * med_size);
    }
    depth_sums[idx(3 * i)] = sum_gd;
    depth_sums[idx(3 * i + 1)] = sum_gd_chat;
    depth_sums[idx(3 * i + 2)] = sum_gd_inner;
  });

  for (int i = 0; i < n; ++i) {
    const ImageConstants& im = model.images[idx(i)];
    const CameraState& c = state.cameras[idx(i)];
    const CameraGrad& gc = camera_grads[idx(i)];
    double g_f = gc.focal, g_z = 0.0;
    double g_ppx = gc.cx * im.width, g_ppy = gc.cy * im.height;

    // D[a] = gs (z + (chat[a] - 1) med size): the per-anchor part ran in parallel above.
    const double sum_gd = depth_sums[idx(3 * i)], sum_gd_chat = depth_sums[idx(3 * i + 1)];
    const double sum_gd_inner = depth_sums[idx(3 * i + 2)];
    g_z += gs * sum_gd;
    g_size[idx(i)] += gs * im.median_depth * sum_gd_chat;
    g_gs += sum_gd_inner;

    // C = gs (t_T - R_T off)
    const Vec3 r_off = mul(c.rotation, c.offset);
    for (int k = 0; k < 3; ++k) {
      g_gs += gc.centre[idx(k)] * (c.chain_translation[idx(k)] - r_off[idx(k)]);
      g_chain[idx(i)][idx(k)] = gs * gc.centre[idx(k)];
    }
    g_rot[idx(i)] = gc.rotation;
    for (int r = 0; r < 3; ++r) {
      for (int k = 0; k < 3; ++k) g_rot[idx(i)][idx(3 * r + k)] -= gs * gc.centre[idx(r)] * c.offset[idx(k)];
    }
    const Vec3 rt_gc = mul_transposed(c.rotation, gc.centre);
    const Vec3 g_off = {-gs * rt_gc[0], -gs * rt_gc[1], -gs * rt_gc[2]};

    // off = z (ox, oy, 1), ox = W/f (0.5 - ppx), oy = H/f (0.5 - ppy)
    const double ox = im.width / c.focal * (0.5 - x[idx(layout.pp(i))]);
    const double oy = im.height / c.focal * (0.5 - x[idx(layout.pp(i) + 1)]);
    g_z += g_off[0] * ox + g_off[1] * oy + g_off[2];
    g_f -= c.z_camera * (g_off[0] * ox + g_off[1] * oy) / c.focal;
    g_ppx -= c.z_camera * im.width / c.focal * g_off[0];
    g_ppy -= c.z_camera * im.height / c.focal * g_off[1];

    // z = size med f / f0
    g_size[idx(i)] += g_z * im.median_depth * c.focal / im.base_focal;
    g_f += g_z * c.size * im.median_depth / im.base_focal;

    // f = clip(exp(lf)); cx = ppx W, cy = ppy H
    if (c.focal_in_range) grad[idx(layout.log_focal(i))] += g_f * std::exp(x[idx(layout.log_focal(i))]);
    grad[idx(layout.pp(i))] += g_ppx;
    grad[idx(layout.pp(i) + 1)] += g_ppy;
  }

  // gs = 1 / min(size): d gs / d min = -1 / min^2, shared evenly by the tied minima.
  double min_size = HUGE_VAL;
  for (const CameraState& c : state.cameras) min_size = std::min(min_size, c.size);
  int ties = 0;
  for (const CameraState& c : state.cameras) ties += c.size == min_size ? 1 : 0;
  const double g_min = -g_gs / (min_size * min_size);
  for (int i = 0; i < n; ++i) {
    const CameraState& c = state.cameras[idx(i)];
    if (c.size == min_size) g_size[idx(i)] += g_min / ties;
    grad[idx(layout.log_size(i))] += g_size[idx(i)] * c.size;
  }

  // The tree, leaves first: T_c = T_p [L_c | t_c], i.e. R_c = R_p L_c and t_T,c = R_p t_c + t_T,p.
  std::vector<Mat3>& g_local = scratch.g_local;
  std::vector<Vec3>& g_trans = scratch.g_trans;
  g_local.assign(idx(n), Mat3{});
  g_trans.assign(idx(n), Vec3{});
  for (auto e = model.tree.edges.rbegin(); e != model.tree.edges.rend(); ++e) {
    const int p = e->first, ch = e->second;
    const CameraState& parent = state.cameras[idx(p)];
    const CameraState& child = state.cameras[idx(ch)];
    const double* t = &x[idx(layout.trans(ch))];
    g_local[idx(ch)] = mul_at_b(parent.rotation, g_rot[idx(ch)]);
    g_trans[idx(ch)] = mul_transposed(parent.rotation, g_chain[idx(ch)]);
    const Mat3 via_rotation = mul_a_bt(g_rot[idx(ch)], child.local_rotation);
    for (int r = 0; r < 3; ++r) {
      for (int k = 0; k < 3; ++k) {
        g_rot[idx(p)][idx(3 * r + k)] += via_rotation[idx(3 * r + k)] + g_chain[idx(ch)][idx(r)] * t[k];
      }
      g_chain[idx(p)][idx(r)] += g_chain[idx(ch)][idx(r)];
    }
  }
  const int root = model.tree.root;
  g_local[idx(root)] = g_rot[idx(root)];
  g_trans[idx(root)] = g_chain[idx(root)];

  // L = R(q / max(|q|, eps)): project out the radial part and divide by the norm.
  for (int i = 0; i < n; ++i) {
    const CameraState& c = state.cameras[idx(i)];
    const std::array<double, 4> g_unit = rotation_grad_to_quat(c.quat_unit, g_local[idx(i)]);
    double* gq = &grad[idx(layout.quat(i))];
    if (c.quat_norm > kNormalizeEps) {
      const double radial = g_unit[0] * c.quat_unit[0] + g_unit[1] * c.quat_unit[1] + g_unit[2] * c.quat_unit[2] +
                            g_unit[3] * c.quat_unit[3];
      for (int k = 0; k < 4; ++k) gq[k] += (g_unit[idx(k)] - c.quat_unit[idx(k)] * radial) / c.quat_norm;
    } else {
      for (int k = 0; k < 4; ++k) gq[k] += g_unit[idx(k)] / kNormalizeEps;
    }
    for (int k = 0; k < 3; ++k) grad[idx(layout.trans(i) + k)] += g_trans[idx(i)][idx(k)];
  }
}

std::array<double, 16> cam_to_world_matrix(const CameraState& camera) {
  const Mat3& r = camera.rotation;
  const Vec3& t = camera.centre;
  return {r[0], r[1], r[2], t[0], r[3], r[4], r[5], t[1], r[6], r[7], r[8], t[2], 0, 0, 0, 1};
}

}  // namespace recon::gpu::sga
