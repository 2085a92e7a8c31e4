// MatchInstance: see match_instance.h. The descriptors never leave the device; the (small) match
// list is read back once to apply min_confidence and max_matches, and stored as new device tensors
// behind a new handle:
// matches_1/matches_2 i32 [K, 2] (x, y), match_conf f32 [K] = sqrt(desc_conf_1 · desc_conf_2) and
// pts3d_1/pts3d_2 f32 [K, 3] (when the source holds those maps).
#include "daemon/serving/match/match_instance.h"

#include <algorithm>
#include <numeric>

#include "daemon/serving/device.h"
#include "daemon/serving/stored_from_host.h"

namespace recon::daemon {
namespace {

template <typename T>
Result<StoredTensor> upload_rows(gpu::Runtime& rt, const char* name, gpu::DType dtype, const std::vector<T>& source,
                                 const std::vector<size_t>& rows, size_t width) {
  std::vector<T> packed;
  packed.reserve(rows.size() * width);
  for (size_t r : rows) packed.insert(packed.end(), source.begin() + r * width, source.begin() + (r + 1) * width);
  std::vector<uint64_t> shape{rows.size()};
  if (width > 1) shape.push_back(width);
  return stored_from_host(rt, name, dtype, std::move(shape), packed);
}

}  // namespace

gpu::FastMatchOptions match_options(int subsample, int border, bool fp16_descriptors) {
  gpu::FastMatchOptions options;
  options.subsample = subsample;
  options.border = border;
  if (fp16_descriptors) options.tuning.tensor = gpu::MatchTuning::kTensorFp16;
  return options;
}

MatchInstance::MatchInstance(gpu::Runtime& runtime) : runtime_(runtime), matchers_(runtime) {}

MatchInstance::~MatchInstance() = default;

Status MatchInstance::warm(int64_t h, int64_t w, int64_t dim, bool fp16_descriptors) {
  const int subsample = gpu::FastMatchOptions{}.subsample;
  // A Match request on a pair result: every map present, the official border.
  gpu::MatchShape pair{h, w, h, w, dim, /*pts3d=*/true, /*conf=*/true};
  RECON_RETURN_IF_ERROR(
      matchers_.get(pair, match_options(subsample, gpu::FastMatchOptions{}.border, fp16_descriptors)).status());
  // The reconstruct job's pairwise stage (pairwise_stage.cpp): confidences only, no border.
  gpu::MatchShape job{h, w, h, w, dim, /*pts3d=*/false, /*conf=*/true};
  return matchers_.get(job, match_options(subsample, kJobMatchBorder, fp16_descriptors)).status();
}

void MatchInstance::run(const RequestContext& context, MatchRequest& job, Device& device, const WorkerContext& worker) {
  const Responder answer = worker.responder(context);
  const auto picked = SteadyClock::now();
  if (!answer.may_start(picked)) return;
  const StoredResult& source = *job.source;
  const auto tensor_of = [&](const char* name) -> const gpu::Tensor* {
    const StoredTensor* t = source.find(name);
    return t != nullptr ? &t->tensor : nullptr;
  };
  gpu::MatchMaps maps;
  if (tensor_of("pts3d_1") != nullptr && tensor_of("pts3d_2") != nullptr) {
    maps.pts3d_a = *tensor_of("pts3d_1");
    maps.pts3d_b = *tensor_of("pts3d_2");
  }
  if (tensor_of("desc_conf_1") != nullptr && tensor_of("desc_conf_2") != nullptr) {
    maps.conf_a = *tensor_of("desc_conf_1");
    maps.conf_b = *tensor_of("desc_conf_2");
  }
  // The model is looked up now: one reloaded at another precision since the inference makes its old
  // results searched at the new one's precision, never a failure.
  const std::optional<ModelInfo> made_by = device.model(source.model);
  const gpu::FastMatchOptions options = match_options(static_cast<int>(job.subsample), gpu::FastMatchOptions{}.border,
                                                      made_by && made_by->precision == gpu::Precision::kF16Heads);
  gpu::Runtime& rt = runtime_;
  const auto start = SteadyClock::now();
  auto host = [&]() -> Result<gpu::HostMatches> {
    RECON_ASSIGN_OR_RETURN(const gpu::MatchShape shape,
                           gpu::MatchShape::of(*tensor_of("desc_1"), *tensor_of("desc_2"), maps));
    RECON_ASSIGN_OR_RETURN(gpu::FastMatcher * matcher, matchers_.get(shape, options));
    RECON_ASSIGN_OR_RETURN(const gpu::MatchResult matched,
                           matcher->run(*tensor_of("desc_1"), *tensor_of("desc_2"), maps));
    return matched.to_host(rt);
  }();
  const uint64_t compute_ns = ns_between(start, SteadyClock::now());
  if (!host.is_ok()) {
    answer.fail(host.status().with_context("matching"));
    return;
  }
  worker.metrics.record_execution("match", 1);
  const auto output_start = SteadyClock::now();
  const std::vector<size_t> rows = gpu::kept_matches(*host, job.min_confidence, job.max_matches);

  std::vector<Result<StoredTensor>> uploaded;
  uploaded.push_back(upload_rows(rt, "matches_1", gpu::DType::kI32, host->xy_a, rows, 2));
  uploaded.push_back(upload_rows(rt, "matches_2", gpu::DType::kI32, host->xy_b, rows, 2));
  if (maps.conf_a.defined()) uploaded.push_back(upload_rows(rt, "match_conf", gpu::DType::kF32, host->conf, rows, 1));
  if (maps.pts3d_a.defined()) {
    uploaded.push_back(upload_rows(rt, "pts3d_1", gpu::DType::kF32, host->pts3d_a, rows, 3));
    uploaded.push_back(upload_rows(rt, "pts3d_2", gpu::DType::kF32, host->pts3d_b, rows, 3));
  }
  std::vector<StoredTensor> tensors;
  for (auto& t : uploaded) {
    if (!t.is_ok()) {
      answer.fail(t.status().with_context("storing the matches"));
      return;
    }
    tensors.push_back(std::move(t).value());
  }
  const StageTimes times{picked, 0, compute_ns, 1, output_start};
  auto handle = answer.store(std::move(job.reservation), "match", std::move(tensors), times);
  if (!handle.is_ok()) {
    answer.fail(handle.status());
    return;
  }
  worker.metrics.record_match(rows.size());
  answer.finish(ModelAnswer{**handle});
}

void MatchRequest::run(RequestContext context, Device& device, const WorkerContext& worker) {
  device.matcher().run(context, *this, device, worker);
}

}  // namespace recon::daemon
