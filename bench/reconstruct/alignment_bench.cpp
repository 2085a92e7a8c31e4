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
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gpu/reconstruct/canonical_view.h"
#include "gpu/reconstruct/dense_points.h"
#include "gpu/reconstruct/sparse_alignment.h"
#include "gpu/weights/safetensors.h"

namespace {

using recon::Result;
using recon::gpu::Dtype;
using recon::gpu::SafetensorsFile;

struct Options {
  std::string case_path;
  int niter1 = 300, niter2 = 300;
  int threads = 0;  // 0: hardware concurrency
  int repeat = 3;
};

// In the file's precision: float for make_alignment_case.py (the network's type), double for a golden file.
struct Prediction {
  std::vector<float> pts3d, conf;
  std::vector<double> pts3d_f64, conf_f64;
  void add_to(recon::gpu::CanonicalViewBuilder& builder) const {
    if (pts3d_f64.empty()) {
      builder.add(std::span<const float>(pts3d), std::span<const float>(conf));
    } else {
      builder.add(std::span<const double>(pts3d_f64), std::span<const double>(conf_f64));
    }
  }
};

struct Case {
  std::vector<int> height, width;
  std::vector<std::vector<Prediction>> own;  // per image
  std::vector<recon::gpu::PairMatches> pairs;
  int subsample = 8;
  std::size_t predictions = 0, matches = 0;
};

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "recon_bench_alignment: %s\n", message.c_str());
  std::exit(1);
}

template <typename Out, typename In>
void convert(std::span<const std::byte> bytes, std::vector<Out>& out) {
  out.resize(bytes.size() / sizeof(In));
  for (std::size_t i = 0; i < out.size(); ++i) {
    In v;
    std::memcpy(&v, bytes.data() + i * sizeof(In), sizeof(In));  // the mapping has no alignment guarantee
    out[i] = static_cast<Out>(v);
  }
}

// An I32, I64, F32 or F64 tensor of `numel` elements (any if numel < 0), converted to Out.
template <typename Out>
Result<std::vector<Out>> read_as(const SafetensorsFile& file, const std::string& name, long long numel = -1) {
  const recon::gpu::TensorInfo* info = file.find(name);
  if (info == nullptr) return recon::not_found("no tensor '" + name + "'");
  if (numel >= 0 && info->numel() != static_cast<std::uint64_t>(numel)) {
    return recon::invalid_argument("'" + name + "' has shape " + recon::gpu::shape_to_string(info->shape) +
                                   "; expected " + std::to_string(numel) + " elements");
  }
  std::vector<Out> out;
  const std::span<const std::byte> bytes = file.data(*info);
  switch (info->dtype) {
    case Dtype::kI32:
      convert<Out, std::int32_t>(bytes, out);
      break;
    case Dtype::kI64:
      convert<Out, std::int64_t>(bytes, out);
      break;
    case Dtype::kF32:
      convert<Out, float>(bytes, out);
      break;
    case Dtype::kF64:
      convert<Out, double>(bytes, out);
      break;
    default:
      return recon::invalid_argument("'" + name + "' is " + recon::gpu::dtype_name(info->dtype) +
                                     "; expected I32, I64, F32 or F64");
  }
  return out;
}

Result<Case> load_case(const std::string& path) {
  RECON_ASSIGN_OR_RETURN(const SafetensorsFile file, SafetensorsFile::open(path));
  Case c;
  if (const auto s = file.metadata("subsample")) c.subsample = std::atoi(std::string(*s).c_str());
  RECON_ASSIGN_OR_RETURN(const std::vector<int> hw, read_as<int>(file, "image_hw"));
  const std::size_t n = hw.size() / 2;
  c.own.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    c.height.push_back(hw[2 * i]);
    c.width.push_back(hw[2 * i + 1]);
    const long long pixels = static_cast<long long>(hw[2 * i]) * hw[2 * i + 1];
    for (int k = 0; file.find("own." + std::to_string(i) + "." + std::to_string(k) + ".pts3d") != nullptr; ++k) {
      const std::string prefix = "own." + std::to_string(i) + "." + std::to_string(k);
      Prediction p;
      const recon::gpu::TensorInfo* info = file.find(prefix + ".pts3d");
      if (info->dtype == Dtype::kF64) {
        RECON_ASSIGN_OR_RETURN(p.pts3d_f64, read_as<double>(file, prefix + ".pts3d", 3 * pixels));
        RECON_ASSIGN_OR_RETURN(p.conf_f64, read_as<double>(file, prefix + ".conf", pixels));
      } else {
        RECON_ASSIGN_OR_RETURN(p.pts3d, read_as<float>(file, prefix + ".pts3d", 3 * pixels));
        RECON_ASSIGN_OR_RETURN(p.conf, read_as<float>(file, prefix + ".conf", pixels));
      }
      c.own[i].push_back(std::move(p));
      ++c.predictions;
    }
  }
  RECON_ASSIGN_OR_RETURN(const std::vector<int> pairs, read_as<int>(file, "pairs"));
  for (std::size_t p = 0; p < pairs.size() / 2; ++p) {
    const std::string prefix = "match." + std::to_string(p);
    recon::gpu::PairMatches m;
    m.image_a = pairs[2 * p];
    m.image_b = pairs[2 * p + 1];
    RECON_ASSIGN_OR_RETURN(m.conf, read_as<float>(file, prefix + ".conf"));
    const auto count = static_cast<long long>(m.conf.size());
    RECON_ASSIGN_OR_RETURN(m.xy_a, read_as<std::int32_t>(file, prefix + ".xy_a", 2 * count));
    RECON_ASSIGN_OR_RETURN(m.xy_b, read_as<std::int32_t>(file, prefix + ".xy_b", 2 * count));
    c.matches += m.conf.size();
    c.pairs.push_back(std::move(m));
  }
  return c;
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
  Result<Case> loaded = load_case(o.case_path);
  if (!loaded.is_ok()) die(loaded.status().with_context("reading " + o.case_path).to_string());
  const Case& c = *loaded;
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
    std::vector<recon::gpu::CanonicalView> views;
    for (std::size_t i = 0; i < n; ++i) {
      recon::gpu::CanonicalViewBuilder builder(c.height[i], c.width[i], c.subsample);
      for (const Prediction& p : c.own[i]) p.add_to(builder);
      Result<recon::gpu::CanonicalView> view = builder.finish();
      if (!view.is_ok())
        die(view.status().with_context("the canonical view of image " + std::to_string(i)).to_string());
      views.push_back(std::move(view).value());
    }
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
