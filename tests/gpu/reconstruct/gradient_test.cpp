// The analytic gradients of both stages' losses against central finite differences, for every
// parameter kind, on a small random problem whose kinematic tree is 3 levels deep (so the chain
// composition is exercised), with and without shared intrinsics; and their independence of the
// number of worker threads.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gpu/reconstruct/alignment_problem.h"

namespace recon::gpu::sga {
namespace {

constexpr int kSubsample = 8;

std::size_t at(int k) {
  return static_cast<std::size_t>(k);
}

// Five images of two sizes near the identity pose, matches between tree neighbours and two more.
ComponentInput random_problem(bool shared_intrinsics, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  ComponentInput in;
  in.shared_intrinsics = shared_intrinsics;
  const int sizes[5][2] = {{32, 24}, {40, 24}, {32, 24}, {32, 32}, {40, 24}};  // (W, H)
  for (int i = 0; i < 5; ++i) {
    ImageConstants im;
    im.width = sizes[i][0];
    im.height = sizes[i][1];
    im.anchors_x = im.width / kSubsample;
    im.anchors_y = im.height / kSubsample;
    im.base_focal = 30.0 + 5.0 * unit(rng);
    const double diag = std::sqrt(double(im.width * im.width + im.height * im.height));
    im.min_focal = 0.25 * diag;
    im.max_focal = 10 * diag;
    std::vector<double> depth(static_cast<std::size_t>(im.num_anchors()));
    for (double& d : depth) d = 3.0 + 2.0 * unit(rng);
    std::vector<double> sorted = depth;
    std::sort(sorted.begin(), sorted.end());
    im.median_depth = sorted[(sorted.size() - 1) / 2];
    in.images.push_back(im);
    in.anchor_depths.push_back(depth);
    in.mean_conf.push_back(1.0 + unit(rng));
  }
  // Root 0; 0 -> 1 -> 2 -> 3 is three levels deep; 4 hangs from 1.
  in.tree.root = 0;
  in.tree.edges = {{0, 1}, {1, 2}, {1, 4}, {2, 3}};
  const int pairs[6][2] = {{0, 1}, {1, 2}, {2, 3}, {1, 4}, {0, 2}, {3, 4}};
  for (const auto& pr : pairs) {
    PairSoA soa;
    soa.image_a = pr[0];
    soa.image_b = pr[1];
    for (int m = 0; m < 40; ++m) {
      for (int side = 0; side < 2; ++side) {
        const ImageConstants& im = in.images[static_cast<std::size_t>(pr[side])];
        const int x = static_cast<int>(unit(rng) * im.width), y = static_cast<int>(unit(rng) * im.height);
        const std::int32_t anchor = (y / kSubsample) * im.anchors_x + x / kSubsample;
        const double off = 0.2 * (unit(rng) - 0.5);
        (side == 0 ? soa.xa : soa.xb).push_back(x);
        (side == 0 ? soa.ya : soa.yb).push_back(y);
        (side == 0 ? soa.anchor_a : soa.anchor_b).push_back(anchor);
        (side == 0 ? soa.offa : soa.offb).push_back(off);
      }
      soa.conf.push_back(0.5 + 3.0 * unit(rng));
    }
    in.pairs.push_back(std::move(soa));
  }
  return in;
}

// Moves every parameter away from the initial values (where all sizes tie and the losses are flat
// in some directions) to a generic point.
void perturb(const ParamLayout& layout, std::vector<double>& x, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int i = 0; i < layout.num_images(); ++i) {
    for (int k = 0; k < 3; ++k) x[at(layout.quat(i) + k)] = 0.08 * normal(rng);
    x[at(layout.quat(i) + 3)] = 1.0 + 0.1 * normal(rng);
    for (int k = 0; k < 3; ++k) x[at(layout.trans(i) + k)] = 0.1 * normal(rng);
    x[at(layout.log_size(i))] = 0.1 * normal(rng);
    x[at(layout.log_focal(i))] += 0.05 * normal(rng);
    for (int k = 0; k < 2; ++k) x[at(layout.pp(i) + k)] += 0.02 * normal(rng);
    for (int a = 0; a < layout.num_depths(i); ++a) x[at(layout.depth(i) + a)] *= 1.0 + 0.05 * normal(rng);
  }
}

std::string kind_of(const ParamLayout& layout, int k) {
  const int n = layout.num_images();
  if (k < 4 * n) return "quat[" + std::to_string(k / 4) + "]";
  if (k < 7 * n) return "trans[" + std::to_string((k - 4 * n) / 3) + "]";
  if (k < 8 * n) return "log_size[" + std::to_string(k - 7 * n) + "]";
  for (int i = 0; i < n; ++i) {
    if (k == layout.log_focal(i)) return "log_focal[" + std::to_string(i) + "]";
    if (k == layout.pp(i) || k == layout.pp(i) + 1) return "pp[" + std::to_string(i) + "]";
    if (k >= layout.depth(i) && k < layout.depth(i) + layout.num_depths(i)) return "depth[" + std::to_string(i) + "]";
  }
  return "?";
}

void expect_gradient_matches_finite_differences(bool shared_intrinsics, Stage stage) {
  WorkerPool pool(2);
  ComponentAligner aligner(random_problem(shared_intrinsics, 7), pool);
  const ParamLayout& layout = aligner.model().layout;
  std::vector<double> x = aligner.parameters();
  perturb(layout, x, 11);
  std::vector<double> grad(x.size());
  const double loss = aligner.loss_and_gradient(stage, x, grad);
  ASSERT_TRUE(std::isfinite(loss));
  ASSERT_GT(loss, 0.0);

  double grad_norm = 0;
  for (const double g : grad) grad_norm = std::max(grad_norm, std::abs(g));
  const double h = 1e-5;
  int checked_nonzero = 0;
  for (int k = 0; k < layout.size(); ++k) {
    std::vector<double> xp = x, xm = x;
    xp[static_cast<std::size_t>(k)] += h;
    xm[static_cast<std::size_t>(k)] -= h;
    const double fd = (aligner.loss_and_gradient(stage, xp, {}) - aligner.loss_and_gradient(stage, xm, {})) / (2 * h);
    const double g = grad[static_cast<std::size_t>(k)];
    // 1e-6 relative, with a floor for entries that are (nearly) zero: finite differences carry
    // about eps * loss / h of rounding noise.
    const double tol = 1e-6 * std::max(std::abs(g), std::abs(fd)) + 1e-9 * std::max(1.0, grad_norm);
    EXPECT_NEAR(g, fd, tol) << "parameter " << k << " (" << kind_of(layout, k) << ")";
    if (std::abs(g) > 1e-6 * grad_norm) ++checked_nonzero;
  }
  // Every kind must actually carry gradient in this problem, or the check would be vacuous.
  EXPECT_GT(checked_nonzero, layout.size() / 2);
}

TEST(SparseAlignmentGradient, CoarseLossGradientEqualsFiniteDifferences) {
  expect_gradient_matches_finite_differences(false, Stage::kCoarse);
}

TEST(SparseAlignmentGradient, FineLossGradientEqualsFiniteDifferences) {
  expect_gradient_matches_finite_differences(false, Stage::kFine);
}

TEST(SparseAlignmentGradient, SharedIntrinsicsGradientsEqualFiniteDifferences) {
  expect_gradient_matches_finite_differences(true, Stage::kCoarse);
  expect_gradient_matches_finite_differences(true, Stage::kFine);
}

TEST(SparseAlignmentGradient, TiedSizesShareTheScalingGradientEvenly) {
  // At the initial state every size is 1: torch's min() backward splits the gradient of 1/min(size)
  // evenly, so the one-sided derivatives differ and the analytic value is their mean.
  WorkerPool pool(1);
  ComponentAligner aligner(random_problem(false, 3), pool);
  const ParamLayout& layout = aligner.model().layout;
  std::vector<double> x = aligner.parameters();
  perturb(layout, x, 5);
  for (int i = 0; i < layout.num_images(); ++i) x[at(layout.log_size(i))] = 0.0;
  std::vector<double> grad(x.size());
  aligner.loss_and_gradient(Stage::kCoarse, x, grad);
  const int k = layout.log_size(2);
  const double h = 1e-6;
  std::vector<double> xp = x, xm = x;
  xp[static_cast<std::size_t>(k)] += h;
  xm[static_cast<std::size_t>(k)] -= h;
  const double f0 = aligner.loss_and_gradient(Stage::kCoarse, x, {});
  const double right = (aligner.loss_and_gradient(Stage::kCoarse, xp, {}) - f0) / h;
  const double left = (f0 - aligner.loss_and_gradient(Stage::kCoarse, xm, {})) / h;
  // Raising one size leaves the minimum with the others; lowering it makes it the sole minimum.
  // d/dls of the scaling part is -gs * g_gs: absent on the right, whole on the left; the share is 1/5.
  const double scaling_part = left - right;
  const double expected = right + scaling_part / layout.num_images();
  EXPECT_NEAR(grad[static_cast<std::size_t>(k)], expected, 1e-4 * std::abs(scaling_part) + 1e-7);
  EXPECT_GT(std::abs(scaling_part), 1e-3);
}

TEST(SparseAlignmentGradient, ResultsDoNotDependOnTheNumberOfThreads) {
  std::vector<double> grads[2];
  double losses[2];
  const int threads[2] = {1, 3};
  for (int t = 0; t < 2; ++t) {
    WorkerPool pool(threads[t]);
    ComponentAligner aligner(random_problem(false, 9), pool);
    std::vector<double> x = aligner.parameters();
    perturb(aligner.model().layout, x, 13);
    grads[t].resize(x.size());
    losses[t] = aligner.loss_and_gradient(Stage::kFine, x, grads[t]);
  }
  EXPECT_EQ(losses[0], losses[1]);
  EXPECT_EQ(grads[0], grads[1]);
}

}  // namespace
}  // namespace recon::gpu::sga
