// RetrievalRunner: see retrieval_runner.h.
#include "daemon/server/retrieval_runner.h"

#include <filesystem>

#include "gpu/models/retrieval/retrieval.h"

namespace recon::daemon {
namespace {

StoredTensor stored(const char* name, gpu::Tensor tensor) {
  StoredTensor t;
  t.name = name;
  t.dtype = tensor.dtype();
  t.shape.assign(tensor.shape().begin(), tensor.shape().end());
  t.bytes = tensor.bytes();
  t.tensor = std::move(tensor);
  return t;
}

}  // namespace

Result<std::unique_ptr<RetrievalRunner>> RetrievalRunner::load(gpu::Runtime& rt, const std::string& path) {
  RECON_ASSIGN_OR_RETURN(std::unique_ptr<gpu::RetrievalModel> model, gpu::RetrievalModel::load(rt, path));
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  return std::unique_ptr<RetrievalRunner>(new RetrievalRunner(rt, std::move(model), ec ? 0 : bytes));
}

RetrievalRunner::RetrievalRunner(gpu::Runtime& rt, std::unique_ptr<gpu::RetrievalModel> model, uint64_t weight_bytes)
    : rt_(rt), model_(std::move(model)), weight_bytes_(weight_bytes) {}

RetrievalRunner::~RetrievalRunner() = default;

int64_t RetrievalRunner::token_dim() const {
  return model_->config().dim;
}

Result<RetrievalAnswer> RetrievalRunner::run(const gpu::Tensor& tokens, uint32_t top_k) {
  RECON_ASSIGN_OR_RETURN(gpu::RetrievalOutput out, model_->encode(tokens));
  RetrievalAnswer answer;
  if (top_k > 0) {
    RECON_ASSIGN_OR_RETURN(gpu::PairCandidates candidates, model_->top_pairs(out.global, static_cast<int>(top_k)));
    RECON_ASSIGN_OR_RETURN(gpu::HostPairCandidates host, candidates.to_host(rt_));
    for (int64_t i = 0; i < host.images; ++i) {
      for (int64_t j = 0; j < host.k; ++j) {
        const size_t at = static_cast<size_t>(i * host.k + j);
        answer.pairs.emplace_back(static_cast<uint32_t>(i), static_cast<uint32_t>(host.indices[at]));
        answer.scores.push_back(host.scores[at]);
      }
    }
  }
  answer.tensors.push_back(stored("embeddings", std::move(out.global)));
  answer.tensors.push_back(stored("features", std::move(out.features)));
  answer.tensors.push_back(stored("attention", std::move(out.attention)));
  answer.tensors.push_back(stored("token_index", std::move(out.token_index)));
  return answer;
}

}  // namespace recon::daemon
