// RetrievalInstance: see retrieval_instance.h.
#include "daemon/serving/retrieval/retrieval_instance.h"

#include <filesystem>

#include "daemon/serving/device.h"
#include "daemon/serving/mast3r/mast3r_instance.h"
#include "daemon/serving/stored_from_host.h"
#include "gpu/models/retrieval/retrieval.h"

namespace recon::daemon {

Result<std::unique_ptr<ModelInstance>> RetrievalInstance::load(const ModelSpec& spec, Device& device, ModelInfo& info) {
  if (spec.backbone.empty()) return invalid_argument("a retrieval model needs a backbone (a mast3r model)");
  auto* backbone = device.loaded<Mast3rInstance>(spec.backbone);
  const std::optional<ModelInfo> encoder = device.model(spec.backbone);
  if (backbone == nullptr || !encoder) {
    return invalid_argument("its backbone model '" + spec.backbone + "' is not loaded");
  }
  RECON_ASSIGN_OR_RETURN(std::unique_ptr<RetrievalInstance> head, open(device.runtime(), spec.path));
  const int64_t encoder_dim = backbone->engine().config().enc_embed_dim;
  if (head->token_dim() != encoder_dim) {
    return invalid_argument("the head takes " + std::to_string(head->token_dim()) + "-wide tokens; the encoder of '" +
                            spec.backbone + "' gives " + std::to_string(encoder_dim));
  }
  // Its images go through the backbone's encoder: the backbone's image rules and precision.
  info.precision = encoder->precision;
  info.patch_size = encoder->patch_size;
  info.default_long_side = encoder->default_long_side;
  info.weight_bytes = head->weight_bytes();
  return std::unique_ptr<ModelInstance>(std::move(head));
}

Result<std::unique_ptr<RetrievalInstance>> RetrievalInstance::open(gpu::Runtime& rt, const std::string& path) {
  RECON_ASSIGN_OR_RETURN(std::unique_ptr<gpu::RetrievalModel> model, gpu::RetrievalModel::load(rt, path));
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  return std::unique_ptr<RetrievalInstance>(new RetrievalInstance(rt, std::move(model), ec ? 0 : bytes));
}

RetrievalInstance::RetrievalInstance(gpu::Runtime& rt, std::unique_ptr<gpu::RetrievalModel> model,
                                     uint64_t weight_bytes)
    : rt_(rt), model_(std::move(model)), weight_bytes_(weight_bytes) {}

RetrievalInstance::~RetrievalInstance() = default;

int64_t RetrievalInstance::token_dim() const {
  return model_->config().dim;
}

Result<RetrievalAnswer> RetrievalInstance::retrieve(const gpu::Tensor& tokens, uint32_t top_k) {
  RECON_ASSIGN_OR_RETURN(gpu::RetrievalOutput out, model_->encode(tokens));
  RetrievalAnswer answer;
  if (top_k > 0) {
    RECON_ASSIGN_OR_RETURN(gpu::PairCandidates candidates, model_->top_pairs(out.global, static_cast<int>(top_k)));
    RECON_ASSIGN_OR_RETURN(gpu::HostPairCandidates host, candidates.to_host(rt_));
    for (const gpu::RetrievalPair& p : host.ranked_pairs()) {
      answer.pairs.emplace_back(static_cast<uint32_t>(p.a), static_cast<uint32_t>(p.b));
      answer.scores.push_back(p.score);
    }
  }
  answer.tensors.push_back(stored_tensor("embeddings", std::move(out.global)));
  answer.tensors.push_back(stored_tensor("features", std::move(out.features)));
  answer.tensors.push_back(stored_tensor("attention", std::move(out.attention)));
  answer.tensors.push_back(stored_tensor("token_index", std::move(out.token_index)));
  if (top_k > 0) {
    // The chosen pairs as tensors too, so that a generic Infer's result holds them.
    std::vector<int32_t> pairs;
    pairs.reserve(answer.pairs.size() * 2);
    for (const auto& [first, second] : answer.pairs) {
      pairs.push_back(static_cast<int32_t>(first));
      pairs.push_back(static_cast<int32_t>(second));
    }
    const uint64_t rows = answer.pairs.size();
    RECON_ASSIGN_OR_RETURN(StoredTensor top_pairs,
                           stored_from_host(rt_, "top_pairs", gpu::DType::kI32, {rows, 2}, pairs));
    RECON_ASSIGN_OR_RETURN(StoredTensor top_scores,
                           stored_from_host(rt_, "top_scores", gpu::DType::kF32, {rows}, answer.scores));
    answer.tensors.push_back(std::move(top_pairs));
    answer.tensors.push_back(std::move(top_scores));
  }
  return answer;
}

void RetrievalInstance::run(const RequestContext& context, RetrievalRequest& job, Mast3rInstance& backbone,
                            const WorkerContext& worker) {
  const Responder answer = worker.responder(context);
  std::optional<PreparedImages> images = start_with_images(job.images, worker, answer);
  if (!images) return;
  const auto picked = images->picked;
  const uint64_t input_ns = images->input_ns;
  const auto start = SteadyClock::now();
  auto tokens = backbone.engine().encode(images->views);
  auto retrieved = tokens.is_ok() ? retrieve(*tokens, job.top_k) : Result<RetrievalAnswer>(tokens.status());
  const uint64_t compute_ns = ns_between(start, SteadyClock::now());
  if (!retrieved.is_ok()) {
    answer.fail(retrieved.status().with_context("retrieval"));
    return;
  }
  worker.metrics.record_execution(job.model, static_cast<uint32_t>(job.images.size()));
  const StageTimes times{picked, input_ns, compute_ns, static_cast<uint32_t>(job.images.size()), SteadyClock::now()};
  auto handle = answer.store(std::move(job.reservation), job.model, std::move(retrieved->tensors), times);
  if (!handle.is_ok()) {
    answer.fail(handle.status());
    return;
  }
  worker.metrics.record_retrieval(job.images.size());
  answer.finish(ModelAnswer{**handle, &retrieved->pairs, &retrieved->scores});
}

void RetrievalRequest::run(RequestContext context, Device& device, const WorkerContext& worker) {
  Mast3rInstance* encoder = device.ready<Mast3rInstance>(backbone);
  RetrievalInstance* head = device.ready<RetrievalInstance>(model);
  if (encoder != nullptr && head != nullptr) {
    head->run(context, *this, *encoder, worker);
  } else {
    worker.responder(context).fail(device.missing(encoder == nullptr ? backbone : model));
  }
}

}  // namespace recon::daemon
