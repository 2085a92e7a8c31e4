// RetrievalRunner: a loaded retrieval head (gpu/models/retrieval/retrieval.h) as the daemon uses
// it — encoder tokens in, the stored tensors of an EncodeRetrieval answer and each image's most
// similar others out. It runs on the device's worker thread only.
// The model is forward-declared so that the daemon's headers do not pull in retrieval.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/server/result_store.h"
#include "gpu/runtime.h"
#include "gpu/status.h"
#include "gpu/tensor.h"

namespace recon::gpu {
class RetrievalModel;
}

namespace recon::daemon {

struct RetrievalAnswer {
  // "embeddings" f32 [N, D'] (unit rows), "features" f32 [N, K, D'], "attention" f32 [N, K],
  // "token_index" i32 [N, K] (the K most attended tokens per image, best first).
  std::vector<StoredTensor> tensors;
  // With top_k > 0: for image i, rows [i·top_k, (i+1)·top_k) are its most similar others.
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  std::vector<float> scores;
};

class RetrievalRunner {
 public:
  static Result<std::unique_ptr<RetrievalRunner>> load(gpu::Runtime& rt, const std::string& path);
  ~RetrievalRunner();

  // Width of the encoder tokens the head expects.
  int64_t token_dim() const;
  uint64_t weight_bytes() const { return weight_bytes_; }

  // tokens [N, T, D] (Mast3rEngine::encode); top_k 0 = no pairs, else 1 ≤ top_k < N.
  Result<RetrievalAnswer> run(const gpu::Tensor& tokens, uint32_t top_k);

 private:
  RetrievalRunner(gpu::Runtime& rt, std::unique_ptr<gpu::RetrievalModel> model, uint64_t weight_bytes);
  gpu::Runtime& rt_;
  std::unique_ptr<gpu::RetrievalModel> model_;
  uint64_t weight_bytes_ = 0;
};

}  // namespace recon::daemon
