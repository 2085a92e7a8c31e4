// One connected component's optimisation (sparse_ga.py sparse_scene_optimizer, SGA:196-466): the
// parameters, the two stages of Adam over the analytic gradient, and the loss-and-gradient function
// the stages (and the gradient tests) call. Internal to gpu/reconstruct/; sparse_alignment.cpp
// validates the inputs and builds a ComponentInput from them (component_input, also what the opt-in
// Ceres comparison in bench/reconstruct/ starts from).
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "gpu/reconstruct/adam.h"
#include "gpu/reconstruct/match_losses.h"
#include "gpu/reconstruct/scene_params.h"
#include "gpu/reconstruct/sparse_alignment.h"
#include "gpu/reconstruct/worker_pool.h"

namespace recon::gpu::sga {

struct ComponentInput {
  std::vector<ImageConstants> images;
  std::vector<std::vector<double>> anchor_depths;  // raw canonical z at the anchors, per image
  std::vector<double> mean_conf;                   // mean canonical confidence (shared-intrinsics init)
  std::vector<PairSoA> pairs;                      // image indices are 0..n-1
  KinematicTree tree;                              // over 0..n-1
  bool shared_intrinsics = false;
};

using Stage = ParamLayout::Stage;

// One connected component's problem as align_scene builds it: `images` (ascending) and `pair_indices`
// (into `pairs`, every kept pair among them) name the component; the views and pairs are validated
// already. Image constants, the matches' anchors and offsets, and the kinematic tree.
// Errors: INVALID_ARGUMENT (a non-positive median anchor depth), the tree's.
Result<ComponentInput> component_input(std::span<const CanonicalView> views, std::span<const PairMatches> pairs,
                                       std::span<const int> images, std::span<const int> pair_indices,
                                       const AlignmentOptions& options);

// gamma 1.5 on 3D distances for the coarse stage, gamma 0.5 on pixel errors for the fine one.
LossKind loss_kind(Stage stage);
RobustLoss stage_loss(Stage stage);

class ComponentAligner {
 public:
  ComponentAligner(ComponentInput input, WorkerPool& pool);
  ComponentAligner(const ComponentAligner&) = delete;
  ComponentAligner& operator=(const ComponentAligner&) = delete;

  const SceneModel& model() const { return model_; }
  const MatchSet& matches() const { return matches_; }
  std::vector<double>& parameters() { return x_; }
  // The state of the last forward pass: after run_stage(), the one at the start of its last
  // iteration, which is what the official returns.
  const SceneState& state() const { return state_; }

  // The stage's loss at x and, if `grad` is not empty, d loss / d x (every entry, trained or not).
  double loss_and_gradient(Stage stage, std::span<const double> x, std::span<double> grad);

  struct StageOutcome {
    std::vector<double> losses;
    bool stopped_on_nan = false;
    bool cancelled = false;
  };
  // `on_iteration(iteration, loss)` after each step; false cancels. niter == 0 only evaluates the
  // starting state (the official's `range(niter or 1)` with an immediate break).
  StageOutcome run_stage(Stage stage, double lr_base, int niter, bool opt_depth,
                         const std::function<bool(int, double)>& on_iteration);

  // Conf-weighted mean pixel distance over both reprojection directions, at state().
  double reprojection_error();

 private:
  SceneModel model_;
  MatchSet matches_;
  std::vector<std::vector<double>> anchor_depths_;
  WorkerPool& pool_;
  LossEvaluator evaluator_;
  std::vector<double> x_, grad_;
  SceneState state_;
  BackwardScratch backward_scratch_;
};

}  // namespace recon::gpu::sga
