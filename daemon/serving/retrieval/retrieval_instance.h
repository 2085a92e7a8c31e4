// RetrievalInstance: a loaded retrieval head (gpu/models/retrieval/retrieval.h) on one device, and
// how EncodeRetrieval runs: its backbone's encoder on every image (one size, one batch), then the
// head on the tokens; the embeddings and local features stay on the device behind one handle, the
// candidate pairs go in the answer. Worker thread only (model_instance.h).
// The model is forward-declared so that the daemon's headers do not pull in retrieval.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/serving/model.h"
#include "daemon/serving/model_instance.h"
#include "daemon/serving/model_request.h"
#include "daemon/serving/result_store.h"
#include "daemon/serving/work_items.h"
#include "daemon/serving/worker_context.h"
#include "gpu/runtime.h"
#include "gpu/status.h"
#include "gpu/tensor.h"

namespace recon::gpu {
class RetrievalModel;
}

namespace recon::daemon {

struct RetrievalAnswer {
  // "embeddings" f32 [N, D'] (unit rows), "features" f32 [N, K, D'], "attention" f32 [N, K],
  // "token_index" i32 [N, K] (the K most attended tokens per image, best first); with top_k > 0
  // also "top_pairs" i32 [N·top_k, 2] and "top_scores" f32 [N·top_k] (`pairs` and `scores`).
  std::vector<StoredTensor> tensors;
  // With top_k > 0: for image i, rows [i·top_k, (i+1)·top_k) are its most similar others.
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  std::vector<float> scores;
};

class Device;
class Mast3rInstance;

// An EncodeRetrieval request (retrieval_admission.cpp), in its KindWork: the backbone's encoder on
// every image (one size), then the head.
class RetrievalRequest final : public KindWork::Body {
 public:
  // On the device's worker: the head and its backbone, both ready here, run it; else it fails with
  // the missing one's state.
  void run(RequestContext context, Device& device, const WorkerContext& worker) override;

  std::string model;     // the retrieval head
  std::string backbone;  // the mast3r model whose encoder feeds it
  std::vector<PendingImage> images;
  uint32_t top_k = 0;
  HandleReservation reservation;
};

class RetrievalInstance final : public ModelInstance {
 public:
  // ModelKind::load: the head at spec.path on the encoder of the loaded mast3r model spec.backbone.
  // INVALID_ARGUMENT when the backbone is not loaded or its token width differs from the head's.
  static Result<std::unique_ptr<ModelInstance>> load(const ModelSpec& spec, Device& device, ModelInfo& info);
  // ModelKind::admit (retrieval_admission.cpp): input list images, parameter top_k → a RetrievalRequest.
  static Status admit(ModelRequest request, Scheduler& scheduler);
  // The head alone, from its file.
  static Result<std::unique_ptr<RetrievalInstance>> open(gpu::Runtime& rt, const std::string& path);
  ~RetrievalInstance() override;

  // Width of the encoder tokens the head expects.
  int64_t token_dim() const;
  uint64_t weight_bytes() const override { return weight_bytes_; }

  // EncodeRetrieval, on the encoder of `backbone`.
  void run(const RequestContext& context, RetrievalRequest& job, Mast3rInstance& backbone, const WorkerContext& worker);
  // The head alone. tokens [N, T, D] (Mast3rEngine::encode); top_k 0 = no pairs, else 1 ≤ top_k < N.
  Result<RetrievalAnswer> retrieve(const gpu::Tensor& tokens, uint32_t top_k);

 private:
  RetrievalInstance(gpu::Runtime& rt, std::unique_ptr<gpu::RetrievalModel> model, uint64_t weight_bytes);
  gpu::Runtime& rt_;
  std::unique_ptr<gpu::RetrievalModel> model_;
  uint64_t weight_bytes_ = 0;
};

}  // namespace recon::daemon
