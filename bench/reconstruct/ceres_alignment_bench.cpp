// recon_bench_ceres_alignment (opt-in: -DRECON_CERES_BENCH=ON, README.md in this folder): recon's Adam
// (300 + 300 iterations, as the official) against Ceres Solver's Levenberg-Marquardt on the same sparse
// alignment problem: a make_alignment_case.py case, the same canonical views, focal estimates, kinematic
// tree and starting point (recon's library builds them), the same coarse (3D) and fine (2D) objectives.
// Both results are evaluated by recon's own loss code; where the case has ground truth, the cameras'
// errors and the reprojection errors over the matches that the true cameras call inliers.
//
//   recon_bench_ceres_alignment --case FILE [--threads 1] [--impl adam,ceres,adam+ceres] [--niter1 300]
//       [--niter2 300] [--max-iterations 100] [--linear-solver iterative_schur] [--verbose]
//
// --impl: adam = recon's two stages; ceres = LM for both stages from recon's start; adam+ceres = recon's
// Adam coarse stage, then LM for the fine stage. Prints one JSON line per optimiser. Only the component
// with the most images is compared.
#include <ceres/version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "bench/reconstruct/alignment_case.h"
#include "bench/reconstruct/alignment_metrics.h"
#include "bench/reconstruct/ceres_alignment_problem.h"
#include "gpu/reconstruct/alignment_problem.h"
#include "gpu/reconstruct/sparse_alignment.h"

namespace {

using recon::Result;
namespace sga = recon::gpu::sga;

struct Options {
  std::string case_path;
  int threads = 1;
  std::string impl = "adam,ceres,adam+ceres";
  int niter1 = 300, niter2 = 300;
  int max_iterations = 100;
  std::string linear_solver = "iterative_schur";  // the fine stage's
  bool verbose = false;
};

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "recon_bench_ceres_alignment: %s\n", message.c_str());
  std::exit(1);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(std::string(arg) + " needs a value");
      return argv[++i];
    };
    if (arg == "--case") {
      o.case_path = value();
    } else if (arg == "--threads") {
      o.threads = std::max(1, std::atoi(value().c_str()));
    } else if (arg == "--impl") {
      o.impl = value();
    } else if (arg == "--niter1") {
      o.niter1 = std::atoi(value().c_str());
    } else if (arg == "--niter2") {
      o.niter2 = std::atoi(value().c_str());
    } else if (arg == "--max-iterations") {
      o.max_iterations = std::max(1, std::atoi(value().c_str()));
    } else if (arg == "--linear-solver") {
      o.linear_solver = value();
    } else if (arg == "--verbose") {
      o.verbose = true;
    } else {
      die("unknown argument " + std::string(arg) +
          "; usage: recon_bench_ceres_alignment --case FILE [--threads 1] [--impl adam,ceres,adam+ceres] [--niter1 "
          "300] "
          "[--niter2 300] [--max-iterations 100] [--linear-solver sparse_normal_cholesky|sparse_schur|"
          "iterative_schur] [--verbose]");
    }
  }
  if (o.case_path.empty()) die("--case FILE is required (see bench/reconstruct/make_alignment_case.py)");
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

// What both optimisers report.
struct Outcome {
  std::string impl, detail;
  double coarse_s = 0, fine_s = 0;
  double coarse_loss = NAN, fine_loss = NAN, reprojection_px = NAN;  // recon's loss code, at the final parameters
  std::vector<double> x;                                             // recon's flat parameters at the end
};

struct Context {
  const recon::bench::AlignmentCase* c = nullptr;
  std::vector<int> images;  // the component's images (case indices)
  sga::ComponentInput input;
  std::vector<char> inliers;  // per match, from the true cameras; empty without ground truth
};

void print(const Options& o, const Context& ctx, sga::ComponentAligner& aligner, const Outcome& r) {
  // recon's loss code at the final parameters, then the cameras it composes from them.
  const double fine_loss = aligner.loss_and_gradient(sga::Stage::kFine, r.x, {});
  const double reprojection = aligner.reprojection_error();
  const sga::SceneState& state = aligner.state();
  std::vector<std::array<double, 16>> cam2w, truth;
  std::vector<double> focal, true_focal;
  for (std::size_t j = 0; j < ctx.images.size(); ++j) {
    cam2w.push_back(sga::cam_to_world_matrix(state.cameras[j]));
    focal.push_back(state.cameras[j].focal);
    if (!ctx.c->gt_focal.empty()) {
      truth.push_back(ctx.c->gt_cam_to_world[static_cast<std::size_t>(ctx.images[j])]);
      true_focal.push_back(ctx.c->gt_focal[static_cast<std::size_t>(ctx.images[j])]);
    }
  }
  const std::vector<double> errors = recon::bench::reprojection_errors(aligner.model(), aligner.matches(),
                                                                       recon::bench::to_absolute(aligner.model(), r.x));
  const recon::bench::Summary all = recon::bench::summarize(errors, {});
  const recon::bench::Summary inl = recon::bench::summarize(errors, ctx.inliers);
  std::string gt = "";
  if (!truth.empty() && truth.size() >= 3) {
    const recon::bench::PoseErrors e = recon::bench::pose_errors(cam2w, focal, truth, true_focal);
    gt = ", \"rotation_deg_median\": " + number(e.rotation_deg_median) +
         ", \"rotation_deg_max\": " + number(e.rotation_deg_max) +
         ", \"centre_pct_median\": " + number(e.centre_pct_median) +
         ", \"centre_pct_max\": " + number(e.centre_pct_max) + ", \"focal_pct_median\": " + number(e.focal_pct_median) +
         ", \"focal_pct_max\": " + number(e.focal_pct_max) + ", \"inlier_matches\": " + std::to_string(inl.count / 2) +
         ", \"inlier_reproj_px_median\": " + number(inl.median) + ", \"inlier_reproj_px_mean\": " + number(inl.mean);
  }
  std::printf(
      "{\"impl\": \"%s\", \"detail\": \"%s\", \"images\": %zu, \"pairs\": %zu, \"matches\": %zu, \"threads\": %d, "
      "\"coarse_s\": %s, \"fine_s\": %s, \"total_s\": %s, \"coarse_loss\": %s, \"fine_loss\": %s, "
      "\"reprojection_px\": %s, \"reproj_px_median\": %s, \"reproj_px_mean\": %s%s}\n",
      r.impl.c_str(), r.detail.c_str(), ctx.images.size(), ctx.input.pairs.size(),
      static_cast<std::size_t>(aligner.matches().conf_sum > 0 ? errors.size() / 2 : 0), o.threads,
      number(r.coarse_s).c_str(), number(r.fine_s).c_str(), number(r.coarse_s + r.fine_s).c_str(),
      number(r.coarse_loss).c_str(), number(fine_loss).c_str(), number(reprojection).c_str(),
      number(all.median).c_str(), number(all.mean).c_str(), gt.c_str());
  std::fflush(stdout);
}

Outcome run_adam(const Options& o, const Context& ctx, sga::WorkerPool& pool) {
  sga::ComponentAligner aligner(ctx.input, pool);
  Outcome r;
  r.impl = "adam";
  r.detail = std::to_string(o.niter1) + "+" + std::to_string(o.niter2) + " iterations";
  auto start = std::chrono::steady_clock::now();
  aligner.run_stage(sga::Stage::kCoarse, 0.07, o.niter1, true, {});
  r.coarse_s = seconds_since(start);
  r.coarse_loss = aligner.loss_and_gradient(sga::Stage::kCoarse, aligner.parameters(), {});
  start = std::chrono::steady_clock::now();
  aligner.run_stage(sga::Stage::kFine, 0.01, o.niter2, true, {});
  r.fine_s = seconds_since(start);
  r.x = aligner.parameters();
  print(o, ctx, aligner, r);
  return r;
}

// LM for the fine stage, and for the coarse stage too unless `adam_coarse` (then recon's Adam runs it).
Outcome run_ceres(const Options& o, const Context& ctx, sga::WorkerPool& pool, bool adam_coarse) {
  sga::ComponentAligner aligner(ctx.input, pool);
  const sga::SceneModel& model = aligner.model();
  recon::bench::CeresStageOptions so;
  so.max_iterations = o.max_iterations;
  so.threads = o.threads;
  so.linear_solver = o.linear_solver;
  so.verbose = o.verbose;
  Outcome r;
  r.impl = adam_coarse ? "adam+ceres-lm" : "ceres-lm";
  std::string coarse_detail;
  if (adam_coarse) {
    const auto start = std::chrono::steady_clock::now();
    aligner.run_stage(sga::Stage::kCoarse, 0.07, o.niter1, true, {});
    r.coarse_s = seconds_since(start);
    r.x = aligner.parameters();
    coarse_detail = "coarse Adam " + std::to_string(o.niter1) + " it";
  } else {
    const double start_loss = aligner.loss_and_gradient(sga::Stage::kCoarse, aligner.parameters(), {});
    recon::bench::AbsoluteScene scene = recon::bench::to_absolute(model, aligner.parameters());
    const recon::bench::CeresStageReport coarse =
        recon::bench::solve_stage(model, aligner.matches(), sga::Stage::kCoarse, scene, so);
    // Ceres's own cost at the start is recon's loss there if the functors reproduce the objective.
    std::fprintf(stderr, "coarse start: recon loss %.9g, ceres cost %.9g; end: ceres cost %.9g\n", start_loss,
                 coarse.initial_cost, coarse.final_cost);
    r.coarse_s = coarse.seconds;
    r.x = recon::bench::to_relative(model, scene);
    coarse_detail = "coarse " + std::to_string(coarse.iterations) + " it (" + coarse.termination + ", build " +
                    number(coarse.build_seconds) + " s)";
  }
  r.coarse_loss = aligner.loss_and_gradient(sga::Stage::kCoarse, r.x, {});
  const double fine_start = aligner.loss_and_gradient(sga::Stage::kFine, r.x, {});
  recon::bench::AbsoluteScene scene = recon::bench::to_absolute(model, r.x);
  const recon::bench::CeresStageReport fine =
      recon::bench::solve_stage(model, aligner.matches(), sga::Stage::kFine, scene, so);
  std::fprintf(stderr, "fine start: recon loss %.9g, ceres cost %.9g; end: ceres cost %.9g\n", fine_start,
               fine.initial_cost, fine.final_cost);
  r.fine_s = fine.seconds;
  r.x = recon::bench::to_relative(model, scene);
  r.detail = "LM (fine: " + o.linear_solver + "), " + coarse_detail + ", fine " + std::to_string(fine.iterations) +
             " it (" + fine.termination + ", build " + number(fine.build_seconds) + " s), ceres " +
             CERES_VERSION_STRING;
  print(o, ctx, aligner, r);
  return r;
}

int run(const Options& o) {
  Result<recon::bench::AlignmentCase> loaded = recon::bench::load_alignment_case(o.case_path);
  if (!loaded.is_ok()) die(loaded.status().with_context("reading " + o.case_path).to_string());
  const recon::bench::AlignmentCase& c = *loaded;
  Result<std::vector<recon::gpu::CanonicalView>> built = recon::bench::canonical_views(c);
  if (!built.is_ok()) die(built.status().to_string());
  const std::vector<recon::gpu::CanonicalView> views = std::move(built).value();

  // align_scene without iterations: its validation, pair selection and components.
  recon::gpu::AlignmentOptions options;
  options.subsample = c.subsample;
  options.niter1 = options.niter2 = 0;
  options.threads = o.threads;
  Result<recon::gpu::SceneAlignment> plan = recon::gpu::align_scene(views, c.pairs, options);
  if (!plan.is_ok()) die(plan.status().with_context("align_scene").to_string());
  Context ctx;
  ctx.c = &c;
  ctx.images = plan->components[0].images;
  std::vector<int> pair_indices;
  std::vector<char> skipped(c.pairs.size(), 0);
  for (const int p : plan->skipped_pairs) skipped[static_cast<std::size_t>(p)] = 1;
  for (std::size_t p = 0; p < c.pairs.size(); ++p) {
    if (skipped[p] == 0 && plan->component[static_cast<std::size_t>(c.pairs[p].image_a)] == 0) {
      pair_indices.push_back(static_cast<int>(p));
    }
  }
  Result<sga::ComponentInput> input = sga::component_input(views, c.pairs, ctx.images, pair_indices, options);
  if (!input.is_ok()) die(input.status().to_string());
  ctx.input = std::move(input).value();

  sga::WorkerPool pool(o.threads);
  if (!c.gt_focal.empty()) {
    sga::ComponentAligner probe(ctx.input, pool);
    ctx.inliers =
        recon::bench::true_inliers(probe.matches(), ctx.images, c.gt_cam_to_world, c.gt_focal, c.width, c.height, 2.0);
  }
  std::string_view impls = o.impl;
  while (!impls.empty()) {
    const std::size_t comma = impls.find(',');
    const std::string_view impl = impls.substr(0, comma);
    impls = comma == std::string_view::npos ? std::string_view() : impls.substr(comma + 1);
    if (impl == "adam") {
      run_adam(o, ctx, pool);
    } else if (impl == "ceres") {
      run_ceres(o, ctx, pool, false);
    } else if (impl == "adam+ceres") {
      run_ceres(o, ctx, pool, true);
    } else {
      die("unknown --impl " + std::string(impl) + " (adam, ceres, adam+ceres)");
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    die(e.what());
  }
}
