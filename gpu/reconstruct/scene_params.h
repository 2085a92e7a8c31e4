// The sparse alignment's parametrisation (sparse_ga.py make_K_cam_depth, SGA:269-321) and its
// hand-written backward pass. Parameters live in one flat vector (ParamLayout says where); the
// forward pass turns them into each camera's K, cam-to-world pose and anchor depths (SceneState);
// backward_scene() takes the loss gradient with respect to those camera quantities back to the
// parameters, through the focal-plane offset, the global scaling 1/min(size), the tree composition
// (reverse BFS order) and the quaternion normalisation. Internal to gpu/reconstruct/.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "gpu/reconstruct/kinematic_tree.h"
#include "gpu/reconstruct/worker_pool.h"

namespace recon::gpu::sga {

using Vec3 = std::array<double, 3>;
using Mat3 = std::array<double, 9>;  // row-major

// What one image contributes to the model, fixed during the optimisation.
struct ImageConstants {
  int width = 0, height = 0;
  int anchors_x = 0, anchors_y = 0;     // W/s, H/s
  double base_focal = 0;                // f0: the canonical view's Weiszfeld focal
  double median_depth = 0;              // lower median of the canonical anchor depths
  double min_focal = 0, max_focal = 0;  // 0.25 and 10 times the image diagonal
  int num_anchors() const { return anchors_x * anchors_y; }
};

// Offsets of each parameter kind in the flat vector. Shared intrinsics: one focal and one
// principal point for every image (a single entry, not N aliases of one entry).
class ParamLayout {
 public:
  ParamLayout() = default;
  ParamLayout(std::span<const ImageConstants> images, bool shared_intrinsics);

  int num_images() const { return n_; }
  bool shared_intrinsics() const { return shared_; }
  int size() const { return total_; }
  int quat(int i) const { return 4 * i; }            // XYZW, relative to the tree parent
  int trans(int i) const { return 4 * n_ + 3 * i; }  // focal-plane point, parent frame
  int log_size(int i) const { return 7 * n_ + i; }
  int log_focal(int i) const { return 8 * n_ + (shared_ ? 0 : i); }
  int pp(int i) const { return 8 * n_ + num_focals() + 2 * (shared_ ? 0 : i); }  // normalised by (W, H)
  int depth(int i) const { return depth_offset_[static_cast<std::size_t>(i)]; }  // normalised anchor depths
  int num_depths(int i) const { return depth_count_[static_cast<std::size_t>(i)]; }

  enum class Stage { kCoarse, kFine };
  // The entries a stage trains (SGA:468-491): coarse = quats, trans, log sizes; fine adds the log
  // focals, principal points and (opt_depth) the anchor depths.
  std::vector<int> trainable(Stage stage, bool opt_depth) const;

 private:
  int num_focals() const { return shared_ ? 1 : n_; }
  int n_ = 0;
  bool shared_ = false;
  int total_ = 0;
  std::vector<int> depth_offset_, depth_count_;
};

// Everything the forward pass needs besides the parameters.
struct SceneModel {
  std::vector<ImageConstants> images;
  ParamLayout layout;
  KinematicTree tree;  // over 0..n-1
};

// The official initialisation (SGA:208-261): identity quaternions, zero translations and log
// sizes, log focal = log f0, principal point (0.5, 0.5), anchor depths divided by their median.
// With shared intrinsics the focal is sum w_i f0_i and pp sum w_i pp_i, w_i = mean conf_i / sum.
std::vector<double> initial_parameters(const SceneModel& model, std::span<const std::vector<double>> anchor_depths,
                                       std::span<const double> mean_confidence);

// One camera after the forward pass, plus what backward_scene needs.
struct CameraState {
  Mat3 rotation{};  // cam-to-world R
  Vec3 centre{};    // cam-to-world t (camera centre)
  double focal = 0, cx = 0, cy = 0;
  double inv_focal = 0, f0_over_f = 0;
  // saved for the backward pass
  std::array<double, 4> quat_unit{};  // q / max(|q|, 1e-12)
  double quat_norm = 0;
  Mat3 local_rotation{};     // R(q_unit), relative to the parent
  Vec3 chain_translation{};  // translation of the composed focal-plane frame
  Vec3 offset{};             // z * (W/f (0.5 - ppx), H/f (0.5 - ppy), 1)
  double z_camera = 0;       // size * median * f / f0
  double size = 0;           // exp(log size)
  bool focal_in_range = true;
};

struct SceneState {
  std::vector<CameraState> cameras;
  std::vector<std::vector<double>> depth;  // per image, anchor z-depths (global scaling included)
  double global_scaling = 1;               // 1 / min size
};

// `pool` (optional) spreads the per-image anchor-depth loops; the result does not depend on it.
void forward_scene(const SceneModel& model, std::span<const double> x, SceneState& state, WorkerPool* pool = nullptr);

// The loss gradient with respect to one camera's quantities (as CameraState defines them).
struct CameraGrad {
  Mat3 rotation{};
  Vec3 centre{};
  double focal = 0, cx = 0, cy = 0;
};

// Per-image buffers of backward_scene, kept between calls so that iterations do not allocate.
struct BackwardScratch {
  std::vector<Mat3> g_rot, g_local;
  std::vector<Vec3> g_chain, g_trans;
  std::vector<double> g_size, depth_sums;
};

// Writes d loss / d x into `grad` (size layout.size(), overwritten) from the gradients with
// respect to the camera quantities and the anchor depths.
void backward_scene(const SceneModel& model, std::span<const double> x, const SceneState& state,
                    std::span<const CameraGrad> camera_grads, std::span<const std::vector<double>> depth_grads,
                    std::span<double> grad, BackwardScratch& scratch, WorkerPool* pool = nullptr);

// roma.unitquat_to_rotmat for XYZW quaternions.
Mat3 quat_to_rotation(const std::array<double, 4>& q);

// Renormalises every quaternion in x (what the official does after each Adam step).
void normalize_quaternions(const ParamLayout& layout, std::span<double> x);

// 4x4 cam-to-world, row-major.
std::array<double, 16> cam_to_world_matrix(const CameraState& camera);

}  // namespace recon::gpu::sga
