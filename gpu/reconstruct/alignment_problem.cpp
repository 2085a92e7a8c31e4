// One component's two-stage optimisation: see alignment_problem.h.
#include "gpu/reconstruct/alignment_problem.h"

#include <cmath>
#include <cstddef>
#include <utility>

namespace recon::gpu::sga {

namespace {

MatchSet finalized(std::vector<PairSoA> pairs, int num_images) {
  MatchSet set;
  set.pairs = std::move(pairs);
  set.finalize(num_images);
  return set;
}

std::vector<int> anchor_counts(const std::vector<ImageConstants>& images) {
  std::vector<int> counts;
  counts.reserve(images.size());
  for (const ImageConstants& im : images) counts.push_back(im.num_anchors());
  return counts;
}

SceneModel make_model(ComponentInput& input) {
  SceneModel model;
  model.layout = ParamLayout(input.images, input.shared_intrinsics);
  model.images = std::move(input.images);
  model.tree = std::move(input.tree);
  return model;
}

}  // namespace

LossKind loss_kind(Stage stage) {
  return stage == Stage::kCoarse ? LossKind::kPoints3d : LossKind::kReprojection2d;
}

RobustLoss stage_loss(Stage stage) {
  return RobustLoss::gamma_loss(stage == Stage::kCoarse ? 1.5 : 0.5);
}

ComponentAligner::ComponentAligner(ComponentInput input, WorkerPool& pool)
    : model_(make_model(input)),
      matches_(finalized(std::move(input.pairs), model_.layout.num_images())),
      anchor_depths_(std::move(input.anchor_depths)),
      pool_(pool),
      evaluator_(matches_, model_.layout.num_images(), anchor_counts(model_.images)) {
  x_ = initial_parameters(model_, anchor_depths_, input.mean_conf);
  grad_.assign(x_.size(), 0.0);
  forward_scene(model_, x_, state_);
}

double ComponentAligner::loss_and_gradient(Stage stage, std::span<const double> x, std::span<double> grad) {
  forward_scene(model_, x, state_, &pool_);
  const bool want_grad = !grad.empty();
  const double loss = evaluator_.evaluate(loss_kind(stage), stage_loss(stage), state_, pool_, want_grad);
  if (want_grad) {
    backward_scene(model_, x, state_, evaluator_.camera_grads(), evaluator_.depth_grads(), grad, backward_scratch_,
                   &pool_);
  }
  return loss;
}

ComponentAligner::StageOutcome ComponentAligner::run_stage(Stage stage, double lr_base, int niter, bool opt_depth,
                                                           const std::function<bool(int, double)>& on_iteration) {
  StageOutcome out;
  if (niter <= 0) {
    forward_scene(model_, x_, state_);
    return out;
  }
  out.losses.reserve(static_cast<std::size_t>(niter));
  Adam adam(model_.layout.trainable(stage, opt_depth));  // fresh moments per stage, like the official
  for (int it = 0; it < niter; ++it) {
    const double lr = cosine_schedule(static_cast<double>(it) / niter, lr_base);
    const double loss = loss_and_gradient(stage, x_, grad_);
    out.losses.push_back(loss);
    if (std::isnan(loss)) {
      // The official steps with the NaN gradient and then stops; stopping first keeps the
      // parameters finite for the next stage. state_ is the start of this iteration either way.
      out.stopped_on_nan = true;
      break;
    }
    adam.step(x_, grad_, lr, &pool_);
    normalize_quaternions(model_.layout, x_);
    if (on_iteration && !on_iteration(it, loss)) {
      out.cancelled = true;
      break;
    }
  }
  return out;
}

double ComponentAligner::reprojection_error() {
  return evaluator_.evaluate(LossKind::kReprojection2d, RobustLoss::distance(), state_, pool_, false);
}

}  // namespace recon::gpu::sga
