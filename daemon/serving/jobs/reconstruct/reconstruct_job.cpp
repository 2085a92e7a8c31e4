// ReconstructJob: see reconstruct_job.h.
#include "daemon/serving/jobs/reconstruct/reconstruct_job.h"

#include <charconv>
#include <cmath>
#include <future>
#include <optional>
#include <string_view>

#include "daemon/server/worker_context.h"
#include "daemon/serving/device.h"
#include "daemon/serving/jobs/reconstruct/pairwise_stage.h"
#include "daemon/serving/jobs/reconstruct/reconstruct_outputs.h"
#include "daemon/serving/mast3r/mast3r_instance.h"
#include "daemon/serving/match/match_instance.h"
#include "gpu/reconstruct/canonical_view.h"
#include "gpu/reconstruct/dense_points.h"

namespace recon::daemon {
namespace {

constexpr const char* kParameters =
    "pairs, subsample, niter1, lr1, niter2, lr2, optim, shared_intrinsics, min_conf, pairs_per_step";

template <typename T>
Result<T> number(const std::string& name, const std::string& text, T low, T high) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !(value >= low && value <= high)) {
    return invalid_argument("parameter " + name + "=" + text + ": expected a number in [" + std::to_string(low) + ", " +
                            std::to_string(high) + "]");
  }
  return value;
}

Result<bool> flag(const std::string& name, const std::string& text) {
  if (text == "1" || text == "true" || text == "yes") return true;
  if (text == "0" || text == "false" || text == "no") return false;
  return invalid_argument("parameter " + name + "=" + text + ": expected true or false");
}

}  // namespace

Result<ReconstructOptions> parse_reconstruct_options(const std::map<std::string, std::string>& parameters) {
  ReconstructOptions o;
  gpu::AlignmentOptions& a = o.alignment;
  for (const auto& [name, value] : parameters) {
    if (name == "pairs") {
      RECON_ASSIGN_OR_RETURN(o.graph, parse_pair_graph(value));
      if (o.graph.kind == PairGraphSpec::Kind::kRetrieval) {
        return unimplemented("pairs=" + value + ": the reconstruct job does not run the retrieval head yet");
      }
    } else if (name == "subsample") {
      RECON_ASSIGN_OR_RETURN(a.subsample, number<int>(name, value, 1, 16));
      if (16 % a.subsample != 0) return invalid_argument("parameter subsample=" + value + ": must divide 16");
    } else if (name == "niter1") {
      RECON_ASSIGN_OR_RETURN(a.niter1, number<int>(name, value, 0, 100000));
    } else if (name == "niter2") {
      RECON_ASSIGN_OR_RETURN(a.niter2, number<int>(name, value, 0, 100000));
    } else if (name == "lr1") {
      RECON_ASSIGN_OR_RETURN(a.lr1, number<double>(name, value, 0.0, 10.0));
    } else if (name == "lr2") {
      RECON_ASSIGN_OR_RETURN(a.lr2, number<double>(name, value, 0.0, 10.0));
    } else if (name == "optim") {
      if (value == "coarse") {
        a.level = gpu::AlignmentOptions::Level::kCoarse;
      } else if (value == "refine") {
        a.level = gpu::AlignmentOptions::Level::kRefine;
      } else if (value == "refine+depth") {
        a.level = gpu::AlignmentOptions::Level::kRefineDepth;
      } else {
        return invalid_argument("parameter optim=" + value + ": expected coarse, refine or refine+depth");
      }
    } else if (name == "shared_intrinsics") {
      RECON_ASSIGN_OR_RETURN(a.shared_intrinsics, flag(name, value));
    } else if (name == "min_conf") {
      RECON_ASSIGN_OR_RETURN(o.min_conf, number<float>(name, value, 0.0f, 1e6f));
    } else if (name == "pairs_per_step") {
      RECON_ASSIGN_OR_RETURN(o.pairs_per_step, number<uint32_t>(name, value, 1, 64));
    } else {
      return invalid_argument("unknown parameter '" + name + "'; the reconstruct job takes " + kParameters);
    }
  }
  return o;
}

Result<std::unique_ptr<Job>> ReconstructJob::create(JobInput input, const JobLimits& limits) {
  RECON_ASSIGN_OR_RETURN(ReconstructOptions options, parse_reconstruct_options(input.parameters));
  const auto images = static_cast<uint32_t>(input.images.size());
  if (images < 2) return invalid_argument("a reconstruction needs at least 2 images");
  for (uint32_t i = 0; i < images; ++i) {
    const ImageSize& size = input.images[i].target;
    if (size.height % options.alignment.subsample != 0 || size.width % options.alignment.subsample != 0) {
      return invalid_argument("images[" + std::to_string(i) + "] runs at " + size.to_string() +
                              ", not a multiple of subsample " + std::to_string(options.alignment.subsample));
    }
  }
  RECON_ASSIGN_OR_RETURN(std::vector<ImagePairIndex> pairs, make_pair_graph(options.graph, images));
  if (pairs.size() > limits.max_pairs) {
    return invalid_argument("pairs=" + options.graph.to_string() + " makes " + std::to_string(pairs.size()) +
                            " pairs of " + std::to_string(images) + " images; at most " +
                            std::to_string(limits.max_pairs) + " per job (a window or retrieval graph scales)");
  }
  return std::unique_ptr<Job>(new ReconstructJob(std::move(input), std::move(options), std::move(pairs)));
}

Result<JobOutput> ReconstructJob::run(JobContext& context) {
  const std::string& model = input_.model;
  const size_t n = input_.images.size();

  // The images, prepared once on the device that then runs every pair (they stay there).
  std::vector<ModelImage> prepared;
  std::vector<gpu::ImageU8View> views;
  size_t device_index = 0;
  RECON_RETURN_IF_ERROR(context.on_device(model, std::nullopt, [&](Device& device, const WorkerContext& worker) {
    RECON_ASSIGN_OR_RETURN(prepared, materialize_all(input_.images, worker.input));
    for (const ModelImage& image : prepared) views.push_back(image.view());
    device_index = device.index();
    return Status::ok();
  }));

  // The pairwise stage, a few pairs per step; the canonical views accumulate as predictions come.
  std::vector<gpu::CanonicalViewBuilder> builders;
  builders.reserve(n);
  for (const ModelImage& image : prepared) {
    builders.emplace_back(static_cast<int>(image.size.height), static_cast<int>(image.size.width),
                          options_.alignment.subsample);
  }
  std::vector<gpu::PairMatches> matched;
  // A step's own-frame predictions go into the canonical views on another thread while the device
  // runs the next step (~9 ms a prediction at 512x384 on one core: 15 % of a job on an H200 when
  // it was in line). One accumulation at a time, in order; it is waited for before the next starts
  // and before the views finish. Declared after `builders`, so that leaving early waits for it
  // before the builders go.
  std::future<void> accumulating;
  JobProgress progress{"pairs", 0, pairs_.size()};
  context.progress(progress);
  for (size_t first = 0; first < pairs_.size(); first += options_.pairs_per_step) {
    const size_t count = std::min<size_t>(options_.pairs_per_step, pairs_.size() - first);
    const std::span<const ImagePairIndex> chunk(pairs_.data() + first, count);
    const bool last = first + count == pairs_.size();
    std::vector<PairwiseOutput> outputs;
    RECON_RETURN_IF_ERROR(context.on_device(model, device_index, [&](Device& device, const WorkerContext&) -> Status {
      Mast3rInstance* mast3r = device.ready<Mast3rInstance>(model);
      if (mast3r == nullptr) return unavailable("model '" + model + "' is no longer ready");
      RECON_ASSIGN_OR_RETURN(outputs, run_pairwise(mast3r->engine(), device.matcher(), device.runtime(), views, chunk,
                                                   options_.alignment.subsample));
      if (last) prepared.clear();  // the images' device memory and leases go with the last pair
      return Status::ok();
    }));
    std::vector<OwnFramePrediction> own;
    for (PairwiseOutput& out : outputs) {
      for (OwnFramePrediction& prediction : out.own) own.push_back(std::move(prediction));
      if (out.matches.conf.empty()) {
        context.progress(JobProgress{"pairs", progress.done, progress.total, std::nanf(""),
                                     "pair (" + std::to_string(out.matches.image_a) + ", " +
                                         std::to_string(out.matches.image_b) + ") has no matches: dropped"});
      }
      matched.push_back(std::move(out.matches));
    }
    if (accumulating.valid()) accumulating.get();
    accumulating = std::async(std::launch::async, [&builders, own = std::move(own)] {
      for (const OwnFramePrediction& prediction : own)
        builders[prediction.image].add(prediction.pts3d, prediction.conf);
    });
    progress.done += count;
    context.progress(progress);
    if (context.cancelled()) return cancelled("cancelled");
  }

  if (accumulating.valid()) accumulating.get();
  std::vector<gpu::CanonicalView> canonical;
  canonical.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto view = builders[i].finish();
    if (!view.is_ok()) return view.status().with_context("the canonical view of image " + std::to_string(i));
    canonical.push_back(std::move(view).value());
  }
  builders.clear();

  const auto on_iteration = [&](std::string_view stage, int iteration, int total, double loss) {
    context.progress(JobProgress{std::string(stage), static_cast<uint64_t>(iteration), static_cast<uint64_t>(total),
                                 static_cast<float>(loss)});
    return !context.cancelled();
  };
  RECON_ASSIGN_OR_RETURN(gpu::SceneAlignment scene,
                         gpu::align_scene(canonical, matched, options_.alignment, on_iteration));
  context.progress(JobProgress{"outputs", 0, 1, std::nanf(""),
                               "mean reprojection error " + std::to_string(scene.fine_reprojection_px) + " px"});
  const std::vector<gpu::DenseImage> dense = gpu::dense_points(scene, canonical, /*clean=*/true);
  const ReconstructArrays arrays = reconstruct_arrays(scene, dense, matched, options_.min_conf);

  JobOutput output;
  output.device = device_index;
  RECON_RETURN_IF_ERROR(context.on_device(model, device_index, [&](Device& device, const WorkerContext&) -> Status {
    RECON_ASSIGN_OR_RETURN(output.tensors, store_reconstruct_arrays(device.runtime(), arrays));
    return Status::ok();
  }));
  return output;
}

}  // namespace recon::daemon
