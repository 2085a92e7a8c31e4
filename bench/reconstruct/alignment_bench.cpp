// recon_bench_alignment: wall-clock time of recon's CPU sparse global alignment (gpu/reconstruct/) on a
// case of make_alignment_case.py (or a golden file of tests/reference/sparse_ga_make_golden.py), stage by
// stage: canonical views (every own-frame prediction streamed into a CanonicalViewBuilder and finished,
// one thread, as the daemon does), align_scene (tree + 300 + 300 Adam iterations by default) and
// dense_points (with clean_pointcloud). The PyTorch side is alignment_torch.py; run_alignment_bench.sh
// runs both and prints the ratio table.
//
//   recon_bench_alignment --case FILE [--niter1 300] [--niter2 300] [--threads 0] [--repeat 3]
//
// Prints one JSON line: impl, device, dtype, images, pairs, matches, predictions, threads, niter1,
// niter2, repeat, canonical_s, align_s, dense_s (medians over --repeat runs), ms_per_iteration,
// coarse_loss and fine_loss (final values of component 0), reprojection_px, components, skipped_pairs.
// The file is read into memory before any clock starts.
// A plain main, not Google Benchmark: each stage runs for seconds and the script wants one record.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/reconstruct/alignment_case.h"
#include "gpu/reconstruct/canonical_view.h"
#include "gpu/reconstruct/dense_points.h"
#include "gpu/reconstruct/sparse_alignment.h"

namespace {

using recon::Result;

struct Options {
  std::string case_path;
  int niter1 = 300, niter2 = 300;
  int threads = 0;  // 0: hardware concurrency
  int repeat = 3;
};

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "recon_bench_alignment: %s\n", message.c_str());
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
    } else if (arg == "--niter1") {
      o.niter1 = std::atoi(value().c_str());
    } else if (arg == "--niter2") {
      o.niter2 = std::atoi(value().c_str());
    } else if (arg == "--threads") {
      o.threads = std::atoi(value().c_str());
    } else if (arg == "--repeat") {
      o.repeat = std::max(1, std::atoi(value().c_str()));
    } else {
      die("unknown argument " + std::string(arg) +
          "; usage: recon_bench_alignment --case FILE [--niter1 300] [--niter2 300] [--threads 0] [--repeat 3]");
    }
  }
  if (o.case_path.empty()) die("--case FILE is required (see bench/reconstruct/make_alignment_case.py)");
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 != 0 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

int run(const Options& o) {
  Result<recon::bench::AlignmentCase> loaded = recon::bench::load_alignment_case(o.case_path);
  if (!loaded.is_ok()) die(loaded.status().with_context("reading " + o.case_path).to_string());
  const recon::bench::AlignmentCase& c = *loaded;
  const std::size_t n = c.own.size();

  recon::gpu::AlignmentOptions options;
  options.subsample = c.subsample;
  options.niter1 = o.niter1;
  options.niter2 = o.niter2;
  options.threads = o.threads;
  const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::thread::hardware_concurrency());

  std::vector<double> canonical_s, align_s, dense_s;
  recon::gpu::SceneAlignment scene;
  for (int r = 0; r < o.repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    Result<std::vector<recon::gpu::CanonicalView>> built = recon::bench::canonical_views(c);
    if (!built.is_ok()) die(built.status().to_string());
    const std::vector<recon::gpu::CanonicalView> views = std::move(built).value();
    canonical_s.push_back(seconds_since(start));

    start = std::chrono::steady_clock::now();
    Result<recon::gpu::SceneAlignment> aligned = recon::gpu::align_scene(views, c.pairs, options);
    align_s.push_back(seconds_since(start));
    if (!aligned.is_ok()) die(aligned.status().with_context("align_scene").to_string());
    scene = std::move(aligned).value();

    start = std::chrono::steady_clock::now();
    const std::vector<recon::gpu::DenseImage> dense = recon::gpu::dense_points(scene, views, true, o.threads);
    dense_s.push_back(seconds_since(start));
    if (dense.size() != n) die("dense_points returned " + std::to_string(dense.size()) + " images");
  }

  const double align = median(align_s);
  const int iterations = std::max(1, o.niter1 + o.niter2);
  const auto last = [](const std::vector<double>& v) { return v.empty() ? NAN : v.back(); };
  std::printf(
      "{\"impl\": \"recon\", \"device\": \"cpu\", \"dtype\": \"float64\", \"images\": %zu, \"pairs\": %zu, "
      "\"matches\": %zu, \"predictions\": %zu, \"threads\": %d, \"niter1\": %d, \"niter2\": %d, \"repeat\": %d, "
      "\"canonical_s\": %s, \"align_s\": %s, \"dense_s\": %s, \"ms_per_iteration\": %s, \"coarse_loss\": %s, "
      "\"fine_loss\": %s, \"reprojection_px\": %s, \"components\": %zu, \"skipped_pairs\": %zu}\n",
      n, c.pairs.size(), c.matches, c.predictions, threads, o.niter1, o.niter2, o.repeat,
      number(median(canonical_s)).c_str(), number(align).c_str(), number(median(dense_s)).c_str(),
      number(1e3 * align / iterations).c_str(), number(last(scene.coarse_loss)).c_str(),
      number(last(scene.fine_loss)).c_str(), number(scene.fine_reprojection_px).c_str(), scene.components.size(),
      scene.skipped_pairs.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {  // std::bad_alloc from a case too big for the host's memory
    die(e.what());
  }
}
