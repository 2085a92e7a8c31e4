// The sparse alignment's two stages (gpu/reconstruct/, docs/SPARSE_GA_REFERENCE.md) as Ceres Solver
// problems, for the opt-in comparison of recon's Adam with Levenberg-Marquardt
// (recon_bench_ceres_alignment, README.md in this folder). Never part of the daemon or of CI.
//
// The same parameters and the same objective, written per match as autodiff cost functors:
//  * per image a quaternion (XYZW) and a translation, a log size, and (fine stage) log focal and
//    normalised principal point, and the normalised anchor depths (one 1-d block per anchor), which are
//    recon's parameters except that the poses are absolute (the tree's composition, done once) instead of
//    relative to the tree parent: the composition is a change of variables with the same minima, and
//    absolute poses keep every residual on two cameras (a sparse problem);
//  * the global scaling 1/min(size) becomes a lower bound log size >= 0 in the coarse stage (the
//    3D loss shrinks with the scene, so at the minimum the smallest size is 1, which is what
//    1/min(size) normalises to) and a fixed root size in the fine stage (the 2D loss does not depend on
//    the scene's scale); the focal clip stays a clip; the tree root's pose is held (the losses do not
//    depend on a rigid motion of the scene);
//  * each match's residual is the 3D difference (coarse) or each direction's 2D pixel error (fine),
//    and a ceres::LossFunction rho(s) = 2 w ((sqrt(s) + o)^gamma - o^gamma), w = conf / sum conf (2D:
//    conf / (2 sum conf)), so that Ceres's cost 1/2 sum rho is recon's loss exactly.
// Both stages start from recon's own starting point and end in recon's flat parameter vector, so that
// recon's loss code evaluates them.
#pragma once

#include <array>
#include <span>
#include <string>
#include <vector>

#include "gpu/reconstruct/alignment_problem.h"

namespace recon::bench {

// One image's parameters with an absolute pose (the Ceres blocks).
struct AbsoluteCamera {
  std::array<double, 4> quat{};        // XYZW, unit: cam-to-world rotation of the composed frame
  std::array<double, 3> trans{};       // the composed frame's translation (the focal-plane point)
  double log_size = 0;                 // with the world scaled so that the global scaling is 1
  std::array<double, 3> intrinsics{};  // log focal, principal point / (W, H)
};

struct AbsoluteScene {
  std::vector<AbsoluteCamera> cameras;
  std::vector<std::vector<double>> depth;  // normalised anchor depths (recon's x), per image
};

// recon's flat parameters -> absolute poses, the global scaling folded into sizes and translations.
AbsoluteScene to_absolute(const gpu::sga::SceneModel& model, std::span<const double> x);
// And back: relative to the tree parent again (recon's forward_scene recomposes the same cameras).
std::vector<double> to_relative(const gpu::sga::SceneModel& model, const AbsoluteScene& scene);

struct CeresStageOptions {
  int max_iterations = 100;
  int threads = 1;
  // The fine stage's (the coarse one, cameras only, always uses sparse_normal_cholesky). At 20 images
  // a sparse factorisation of the fine stage (57,000 parameters) costs ~15-19 s an iteration on the CI
  // machine, iterative_schur ~1 s: sparse_normal_cholesky, sparse_schur or iterative_schur.
  std::string linear_solver = "iterative_schur";
  bool verbose = false;
};

struct CeresStageReport {
  double seconds = 0;        // building the problem and solving it
  double build_seconds = 0;  // of which building
  int iterations = 0, successful = 0;
  double initial_cost = 0, final_cost = 0;  // Ceres's 1/2 sum rho: recon's loss
  std::string termination;
  int residual_blocks = 0, parameters = 0;
};

// Minimises the stage's loss over `scene` in place (coarse: poses and sizes; fine: everything).
CeresStageReport solve_stage(const gpu::sga::SceneModel& model, const gpu::sga::MatchSet& matches,
                             gpu::sga::Stage stage, AbsoluteScene& scene, const CeresStageOptions& options);

// Per match and direction, the pixel distance between the match and the other side's point
// reprojected (both directions, pair order), with recon's clips: what the fine loss is made of.
std::vector<double> reprojection_errors(const gpu::sga::SceneModel& model, const gpu::sga::MatchSet& matches,
                                        const AbsoluteScene& scene);

}  // namespace recon::bench
