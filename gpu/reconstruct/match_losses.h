// The sparse alignment's losses (SGA:385-429) over every match of a component, with their analytic
// gradients with respect to each camera's quantities (cam-to-world R and t, f, cx, cy) and anchor
// depths. The matches are stored per pair as structures of arrays and cut into fixed segments; each
// segment is one task of the worker pool with its own accumulators, and the results are summed in
// segment order, so the numbers do not depend on the number of threads or on scheduling.
// Internal to gpu/reconstruct/; nothing here allocates after the first evaluate().
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "gpu/reconstruct/scene_params.h"
#include "gpu/reconstruct/worker_pool.h"

namespace recon::gpu::sga {

// One pair's matches: pixel (x, y), the anchor of its block and its relative-depth offset minus
// one (canon2[p] / canon2[anchor] - 1) on both sides, and the match confidence.
struct PairSoA {
  int image_a = 0, image_b = 0;  // indices into the component's images
  std::vector<double> xa, ya, offa;
  std::vector<std::int32_t> anchor_a;
  std::vector<double> xb, yb, offb;
  std::vector<std::int32_t> anchor_b;
  std::vector<double> conf;
  int size() const { return static_cast<int>(conf.size()); }
};

struct MatchSet {
  struct Segment {
    int pair = 0, begin = 0, end = 0;
  };
  static constexpr int kSegmentSize = 512;

  std::vector<PairSoA> pairs;
  std::vector<Segment> segments;                        // made by finalize()
  std::vector<std::vector<std::pair<int, int>>> sides;  // per image: (pair, 0 = a / 1 = b), pair order
  double conf_sum = 0;

  // Cuts the pairs into segments and indexes each image's sides; call once the pairs are in.
  void finalize(int num_images);
};

// rho(r) = (r + o)^gamma - o^gamma with o = gamma^(-1/(gamma - 1)) (gamma_loss, LOSS:19-28), or the
// plain distance (for the reported mean reprojection error).
struct RobustLoss {
  enum class Kind { kDistance, kGamma15, kGamma05, kGamma };
  Kind kind = Kind::kDistance;
  double gamma = 1, offset = 0, offset_pow = 0;

  static RobustLoss gamma_loss(double gamma);
  static RobustLoss distance() { return {}; }
};

enum class LossKind {
  kPoints3d,        // sum c rho(|P_a - P_b|) / sum c: both images' world points of each match agree
  kReprojection2d,  // sum c (rho(|x_a - pi_a(P_b)|) + rho(|x_b - pi_b(P_a)|)) / (2 sum c)
};

class LossEvaluator {
 public:
  LossEvaluator(const MatchSet& matches, int num_images, std::span<const int> num_anchors);

  // The loss at `state`. With `want_grad`, camera_grads() and depth_grads() then hold its gradient.
  double evaluate(LossKind kind, const RobustLoss& rho, const SceneState& state, WorkerPool& pool, bool want_grad);

  const std::vector<CameraGrad>& camera_grads() const { return camera_grads_; }
  const std::vector<std::vector<double>>& depth_grads() const { return depth_grads_; }

 private:
  struct SideGrad {
    double rotation[9];
    double centre[3];
    double focal, cx, cy;
  };
  struct SegmentResult {
    double loss;
    SideGrad a, b;
  };

  const MatchSet& matches_;
  std::vector<SegmentResult> segments_;
  std::vector<std::vector<double>> gd_a_, gd_b_;  // per pair and match: d loss / d anchor depth
  std::vector<CameraGrad> camera_grads_;
  std::vector<std::vector<double>> depth_grads_;
};

}  // namespace recon::gpu::sga
