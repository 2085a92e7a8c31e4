// ReconstructJob: see reconstruct_job.h.
#include "daemon/serving/jobs/reconstruct/reconstruct_job.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <numeric>
#include <optional>
#include <span>
#include <string_view>

#include "daemon/serving/device.h"
#include "daemon/serving/jobs/reconstruct/pairwise_stage.h"
#include "daemon/serving/jobs/reconstruct/reconstruct_outputs.h"
#include "daemon/serving/mast3r/mast3r_instance.h"
#include "daemon/serving/match/match_instance.h"
#include "daemon/serving/parameters.h"
#include "daemon/serving/retrieval/retrieval_instance.h"
#include "daemon/serving/worker_context.h"
#include "gpu/reconstruct/canonical_view.h"
#include "gpu/reconstruct/dense_points.h"

namespace recon::daemon {
namespace {

constexpr const char* kParameters =
    "pairs, subsample, niter1, lr1, niter2, lr2, optim, shared_intrinsics, min_conf, pairs_per_step, "
    "retrieval_model";

// Images per device step of the encoding (each image's tokens then stay on the device for the
// pairs: 1.5 MiB an image at 512x384 for ViT-L in fp16, 3 MiB in fp32).
constexpr size_t kEncodeStepImages = 16;

// Where the pairs stage's wall time went, for its last event: the rest is the worker's turns (other
// clients' requests between the steps), the host's work between steps and the accumulation's tail.
std::string pairs_stage_summary(const PairwiseTimes& times, std::chrono::steady_clock::duration wall) {
  const double wall_s = std::chrono::duration<double>(wall).count();
  const double rest_s = wall_s - (times.network_ms + times.waited_ms) / 1000;
  char text[200];
  std::snprintf(text, sizeof text,
                "%.2f s: network %.2f s; matching %.2f s and own-frame copies %.2f s, %.2f s of them after the "
                "network; the rest %.2f s",
                wall_s, times.network_ms / 1000, times.matching_ms / 1000, times.copies_ms / 1000,
                times.waited_ms / 1000, rest_s);
  return text;
}

// The encode stage's last event: its wall time and the part that made the images ready on the
// device (read from their regions, prepared); the rest is the encoder's steps.
std::string encode_stage_summary(std::chrono::steady_clock::time_point start,
                                 std::chrono::steady_clock::time_point images_in) {
  const auto now = std::chrono::steady_clock::now();
  char text[120];
  std::snprintf(text, sizeof text, "%.2f s: images in %.2f s, the encoder's steps %.2f s",
                std::chrono::duration<double>(now - start).count(),
                std::chrono::duration<double>(images_in - start).count(),
                std::chrono::duration<double>(now - images_in).count());
  return text;
}

// The retrieval head named `name`, or else the one loaded on `backbone`'s encoder.
Result<RetrievalInstance*> retrieval_head(Device& device, const std::string& backbone, const std::string& name) {
  for (const ModelInfo& info : device.models()) {
    if (info.kind != "retrieval" || (name.empty() ? info.backbone != backbone : info.name != name)) continue;
    if (info.backbone != backbone) {
      return invalid_argument("retrieval_model '" + name + "' reads the encoder of '" + info.backbone + "', not of '" +
                              backbone + "'");
    }
    RetrievalInstance* head = device.ready<RetrievalInstance>(info.name);
    if (head == nullptr) return unavailable("retrieval model '" + info.name + "' is " + model_state_name(info.state));
    return head;
  }
  return not_found(name.empty() ? "a retrieval pair graph needs a retrieval model on the encoder of '" + backbone +
                                      "'; none is loaded (recond --retrieval, or LoadModel with kind retrieval)"
                                : "retrieval_model '" + name + "' is not a loaded retrieval model");
}

}  // namespace

Result<ReconstructOptions> parse_reconstruct_options(const std::map<std::string, std::string>& parameters) {
  ReconstructOptions o;
  gpu::AlignmentOptions& a = o.alignment;
  for (const auto& [name, value] : parameters) {
    if (name == "pairs") {
      RECON_ASSIGN_OR_RETURN(o.graph, parse_pair_graph(value));
    } else if (name == "subsample") {
      // Whether it divides the images' sides is checked against them (create()).
      RECON_ASSIGN_OR_RETURN(a.subsample, parameter_number<int>(name, value, 1, 16));
    } else if (name == "niter1") {
      RECON_ASSIGN_OR_RETURN(a.niter1, parameter_number<int>(name, value, 0, 100000));
    } else if (name == "niter2") {
      RECON_ASSIGN_OR_RETURN(a.niter2, parameter_number<int>(name, value, 0, 100000));
    } else if (name == "lr1") {
      RECON_ASSIGN_OR_RETURN(a.lr1, parameter_number<double>(name, value, 0.0, 10.0));
    } else if (name == "lr2") {
      RECON_ASSIGN_OR_RETURN(a.lr2, parameter_number<double>(name, value, 0.0, 10.0));
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
      RECON_ASSIGN_OR_RETURN(a.shared_intrinsics, parameter_flag(name, value));
    } else if (name == "min_conf") {
      RECON_ASSIGN_OR_RETURN(o.min_conf, parameter_number<float>(name, value, 0.0f, 1e6f));
    } else if (name == "pairs_per_step") {
      RECON_ASSIGN_OR_RETURN(o.pairs_per_step, parameter_number<uint32_t>(name, value, 1, 64));
    } else if (name == "retrieval_model") {
      if (value.empty()) return invalid_argument("parameter retrieval_model is empty");
      o.retrieval_model = value;
    } else {
      return invalid_argument("unknown parameter '" + name + "'; the reconstruct job takes " + kParameters);
    }
  }
  return o;
}

namespace {

// "; subsample=4 or 7 divides every image's sides"-like: the values from 2 to 16 that would do (a
// DUNE model's 14-pixel grids, e.g. 336x252, need 7 or 14 where the official default is 8).
std::string subsample_hint(std::span<const PendingImage> images) {
  uint32_t g = 0;
  for (const PendingImage& image : images) g = std::gcd(g, std::gcd(image.target.width, image.target.height));
  std::vector<std::string> fits;
  for (uint32_t s = 2; s <= 16; ++s) {
    if (g % s == 0) fits.push_back(std::to_string(s));
  }
  if (fits.empty()) return "; no subsample from 2 to 16 divides every image's sides";
  std::string list = fits[0];
  for (size_t k = 1; k < fits.size(); ++k) list += (k + 1 == fits.size() ? " or " : ", ") + fits[k];
  return "; subsample=" + list + " divides every image's sides";
}

}  // namespace

Result<std::unique_ptr<Job>> ReconstructJob::create(JobInput input, const JobLimits& limits) {
  RECON_ASSIGN_OR_RETURN(ReconstructOptions options, parse_reconstruct_options(input.parameters));
  const auto images = static_cast<uint32_t>(input.images.size());
  if (images < 2) return invalid_argument("a reconstruction needs at least 2 images");
  for (uint32_t i = 0; i < images; ++i) {
    const ImageSize& size = input.images[i].target;
    if (size.height % options.alignment.subsample != 0 || size.width % options.alignment.subsample != 0) {
      return invalid_argument("images[" + std::to_string(i) + "] runs at " + size.to_string() +
                              ", not a multiple of subsample " + std::to_string(options.alignment.subsample) +
                              subsample_hint(input.images));
    }
  }
  const PairGraphSpec& graph = options.graph;
  if (graph.kind == PairGraphSpec::Kind::kRetrieval) {
    // Its pairs come from the retrieval head in run(); what can be checked now is.
    if (graph.key_images > images) {
      return invalid_argument("pairs=" + graph.to_string() + ": " + std::to_string(graph.key_images) +
                              " key images of " + std::to_string(images));
    }
    for (uint32_t i = 1; i < images; ++i) {
      if (!(input.images[i].target == input.images[0].target)) {
        return invalid_argument("pairs=" + graph.to_string() + " encodes the images together: images[" +
                                std::to_string(i) + "] runs at " + input.images[i].target.to_string() +
                                ", images[0] at " + input.images[0].target.to_string());
      }
    }
    // At most: every pair among the key images, each other image with its key, and its K nearest.
    const uint64_t keys = graph.key_images;
    const uint64_t most = keys * (keys > 0 ? keys - 1 : 0) / 2 + uint64_t{images} * (1 + graph.neighbours);
    if (most > limits.max_pairs) {
      return invalid_argument("pairs=" + graph.to_string() + " can make " + std::to_string(most) + " pairs of " +
                              std::to_string(images) + " images; at most " + std::to_string(limits.max_pairs) +
                              " per job");
    }
    return std::unique_ptr<Job>(new ReconstructJob(std::move(input), std::move(options), {}, limits.max_pairs));
  }
  RECON_ASSIGN_OR_RETURN(std::vector<ImagePairIndex> pairs, make_pair_graph(graph, images));
  if (pairs.size() > limits.max_pairs) {
    return invalid_argument("pairs=" + graph.to_string() + " makes " + std::to_string(pairs.size()) + " pairs of " +
                            std::to_string(images) + " images; at most " + std::to_string(limits.max_pairs) +
                            " per job (a window or retrieval graph scales)");
  }
  return std::unique_ptr<Job>(
      new ReconstructJob(std::move(input), std::move(options), std::move(pairs), limits.max_pairs));
}

Result<std::vector<ImagePairIndex>> ReconstructJob::retrieval_pairs(JobContext& context,
                                                                    const gpu::EncodedImages& encoded,
                                                                    size_t device_index) {
  const size_t n = encoded.size();
  context.progress(JobProgress{"retrieval", 0, n});
  std::vector<float> embeddings;  // [n, dim], unit rows
  size_t dim = 0;
  RECON_RETURN_IF_ERROR(
      context.on_device(input_.model, device_index, [&](Device& device, const WorkerContext&) -> Status {
        if (device.ready<Mast3rInstance>(input_.model) == nullptr) {
          return unavailable("model '" + input_.model + "' is no longer ready");
        }
        RECON_ASSIGN_OR_RETURN(RetrievalInstance * head,
                               retrieval_head(device, input_.model, options_.retrieval_model));
        // The retrieval head reads the tokens the pairs read: each image is encoded once per job.
        std::vector<float> rows;
        for (const gpu::EncodedImages::Run& run : encoded.runs()) {
          RECON_ASSIGN_OR_RETURN(const RetrievalAnswer answer, head->retrieve(*run.tokens, 0));
          const StoredTensor& global = answer.tensors.at(0);  // "embeddings" f32 [rows, D]
          dim = static_cast<size_t>(global.shape.at(1));
          embeddings.resize(n * dim);
          rows.resize(run.images.size() * dim);
          RECON_RETURN_IF_ERROR(global.tensor.download(device.runtime(), rows.data(), rows.size() * 4));
          for (size_t r = 0; r < run.images.size(); ++r) {
            std::copy_n(rows.data() + r * dim, dim, embeddings.data() + run.images[r] * dim);
          }
        }
        return Status::ok();
      }));
  std::vector<float> similarity(n * n);  // cosine: the rows are unit vectors
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      double dot = 0;
      for (size_t d = 0; d < dim; ++d) dot += double{embeddings[i * dim + d]} * embeddings[j * dim + d];
      similarity[i * n + j] = static_cast<float>(dot);
    }
  }
  RECON_ASSIGN_OR_RETURN(std::vector<ImagePairIndex> pairs,
                         make_pair_graph(options_.graph, static_cast<uint32_t>(n), similarity));
  if (pairs.size() > max_pairs_) {
    return invalid_argument("pairs=" + options_.graph.to_string() + " made " + std::to_string(pairs.size()) +
                            " pairs; at most " + std::to_string(max_pairs_) + " per job");
  }
  context.progress(JobProgress{"retrieval", n, n, std::nanf(""),
                               std::to_string(pairs.size()) + " pairs from the retrieval similarities"});
  return pairs;
}

Result<JobOutput> ReconstructJob::run(JobContext& context) {
  const std::string& model = input_.model;
  const size_t n = input_.images.size();

  // The images, prepared once on the device that then runs every step (they stay there until encoded).
  const auto encode_start = std::chrono::steady_clock::now();
  context.progress(JobProgress{"encode", 0, n});
  std::vector<ModelImage> prepared;
  std::vector<gpu::ImageU8View> views;
  size_t device_index = 0;
  RECON_RETURN_IF_ERROR(context.on_device(model, std::nullopt, [&](Device& device, const WorkerContext& worker) {
    RECON_ASSIGN_OR_RETURN(prepared, materialize_all(input_.images, worker.input));
    for (const ModelImage& image : prepared) views.push_back(image.view());
    device_index = device.index();
    return Status::ok();
  }));
  const auto images_in = std::chrono::steady_clock::now();
  // Every image through the encoder once, a few per step (other sessions are served between the
  // steps); the pairs' steps then run only the decoder and heads. The images go with the last.
  gpu::EncodedImages encoded;
  for (size_t first = 0; first < n; first += kEncodeStepImages) {
    const size_t count = std::min(kEncodeStepImages, n - first);
    RECON_RETURN_IF_ERROR(context.on_device(model, device_index, [&](Device& device, const WorkerContext&) -> Status {
      Mast3rInstance* mast3r = device.ready<Mast3rInstance>(model);
      if (mast3r == nullptr) return unavailable("model '" + model + "' is no longer ready");
      RECON_ASSIGN_OR_RETURN(gpu::EncodedImages more,
                             mast3r->engine().encode_images(std::span(views).subspan(first, count)));
      RECON_RETURN_IF_ERROR(encoded.append(std::move(more)));
      if (first + count == n) prepared.clear();
      return Status::ok();
    }));
    context.progress(JobProgress{"encode", first + count, n});
    if (context.cancelled()) return cancelled("cancelled");
  }
  context.progress(JobProgress{"encode", n, n, std::nanf(""), encode_stage_summary(encode_start, images_in)});
  if (options_.graph.kind == PairGraphSpec::Kind::kRetrieval) {
    RECON_ASSIGN_OR_RETURN(pairs_, retrieval_pairs(context, encoded, device_index));
  }

  // The pairwise stage, a few pairs per step; the canonical views accumulate as predictions come.
  std::vector<gpu::CanonicalViewBuilder> builders;
  builders.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const gpu::ViewSize size = encoded.image_size(i);
    builders.emplace_back(static_cast<int>(size.height), static_cast<int>(size.width), options_.alignment.subsample);
  }
  std::vector<gpu::PairMatches> matched;
  // A step's own-frame predictions go into the canonical views on another thread while the device
  // runs the next step (~9 ms a prediction at 512x384 on one core: 15 % of a job on an H200 when
  // it was in line), the step's images on as many cores (gpu::add_predictions). One accumulation
  // at a time, in order; it is waited for before the next starts and before the views finish.
  // Declared after `builders`, so that leaving early waits for it before the builders go. One pool
  // for the job's accumulations and the views' finish, used by one of them at a time.
  gpu::sga::WorkerPool canonical_pool(options_.alignment.threads);
  std::future<Status> accumulating;
  JobProgress progress{"pairs", 0, pairs_.size()};
  context.progress(progress);
  std::vector<int> widths(n);
  for (size_t i = 0; i < n; ++i) widths[i] = static_cast<int>(encoded.image_size(i).width);
  const auto stage_start = std::chrono::steady_clock::now();
  PairwiseTimes times;
  // Each device step runs the network of its pairs while the previous step's are matched on
  // another thread and queue (pairwise_stage.h); one step more matches the last pairs.
  std::optional<PairwiseNetwork> unmatched;
  for (size_t first = 0; first < pairs_.size() || unmatched; first += options_.pairs_per_step) {
    const size_t count = first < pairs_.size() ? std::min<size_t>(options_.pairs_per_step, pairs_.size() - first) : 0;
    const std::span<const ImagePairIndex> chunk(pairs_.data() + std::min(first, pairs_.size()), count);
    const bool last = count > 0 && first + count == pairs_.size();
    std::vector<PairwiseOutput> outputs;
    std::optional<PairwiseNetwork> network;
    RECON_RETURN_IF_ERROR(context.on_device(model, device_index, [&](Device& device, const WorkerContext&) -> Status {
      Mast3rInstance* mast3r = device.ready<Mast3rInstance>(model);
      if (mast3r == nullptr) return unavailable("model '" + model + "' is no longer ready");
      if (count > 0 && !encoded.encoded_by(mast3r->engine())) {
        return unavailable("model '" + model + "' was reloaded while the job ran (its images were encoded by the " +
                           "weights before): run the job again");
      }
      PairwiseTimes matching_times;
      std::future<Result<std::vector<PairwiseOutput>>> matching;  // joined before this step returns
      if (unmatched) {
        // Beside the network only where the device has a second compute queue; with one queue
        // (lavapipe) the two would only take turns on it, and the thread cost the CI machine's
        // 8-view scene 31 -> 40 s, so the matching then runs after the network on this thread.
        gpu::Runtime& rt = device.runtime();
        const bool beside = rt.context().has_second_compute_queue();
        matching = std::async(beside ? std::launch::async : std::launch::deferred, [&] {
          return match_pair_network(*unmatched, device.matcher(), rt, rt.context().second_compute_queue(), widths,
                                    options_.alignment.subsample, matching_times);
        });
      }
      Status ran = Status::ok();
      if (count > 0) {
        Result<PairwiseNetwork> net = run_pair_network(mast3r->engine(), encoded, chunk, times);
        if (net.is_ok()) {
          network = std::move(net).value();
        } else {
          ran = net.status();
        }
        if (last) encoded = {};  // the encodings' device memory goes with the last pair
      }
      if (matching.valid()) {
        const auto wait_start = std::chrono::steady_clock::now();
        Result<std::vector<PairwiseOutput>> matched = matching.get();
        times.waited_ms +=
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wait_start).count();
        times.matching_ms += matching_times.matching_ms;
        times.copies_ms += matching_times.copies_ms;
        RECON_RETURN_IF_ERROR(ran);
        RECON_ASSIGN_OR_RETURN(outputs, std::move(matched));
      }
      return ran;
    }));
    unmatched = std::move(network);
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
    if (accumulating.valid()) {
      RECON_RETURN_IF_ERROR(accumulating.get());
    }
    accumulating = std::async(std::launch::async, [&builders, &canonical_pool, own = std::move(own)] {
      std::vector<gpu::OwnFrameMaps> maps;
      for (const OwnFramePrediction& prediction : own)
        maps.push_back({prediction.image, prediction.pts3d, prediction.conf});
      return gpu::add_predictions(builders, maps, canonical_pool);
    });
    progress.done += outputs.size();
    context.progress(progress);
    if (context.cancelled()) return cancelled("cancelled");
  }

  if (accumulating.valid()) {
    RECON_RETURN_IF_ERROR(accumulating.get());
  }
  context.progress(JobProgress{"pairs", progress.done, progress.total, std::nanf(""),
                               pairs_stage_summary(times, std::chrono::steady_clock::now() - stage_start)});
  RECON_ASSIGN_OR_RETURN(const std::vector<gpu::CanonicalView> canonical,
                         gpu::finish_canonical_views(builders, canonical_pool));
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
