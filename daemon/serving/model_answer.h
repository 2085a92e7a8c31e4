// ModelAnswer: what a model's instance answers for one request — the result it stored, plus for
// retrieval with top_k the pairs it chose — before the transport renders it as the answer of the
// verb that asked (the generic Infer's InferResult, or a released verb's own body). The instance
// does not know which verb that was: the transport names the renderer at admission
// (RequestContext::render).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "daemon/serving/result_store.h"
#include "gpu/models/mast3r/mast3r_batch_plan.h"

namespace recon::daemon {

struct ModelAnswer {
  const StoredResult& result;
  // Retrieval with top_k > 0: for image i, rows [i·top_k, (i+1)·top_k) are its most similar
  // others, with their similarities (the result holds them too, as top_pairs and top_scores).
  const std::vector<std::pair<uint32_t, uint32_t>>* pairs = nullptr;
  const std::vector<float>* scores = nullptr;
};

// The whole success answer (a Response) to request `request_id`.
using AnswerRenderer = std::vector<uint8_t> (*)(uint64_t request_id, const ModelAnswer& answer);

// What an instance answers for a request of several pairs (InferBatch), all at once or streamed one
// pair at a time: `results[i]` is the result of `pairs[i]`, which is pair `first_index + i` of the
// request; `final` on the last answer of the request.
struct PairsAnswer {
  std::span<const StoredResult* const> results;
  std::span<const gpu::ImagePair> pairs;
  uint32_t first_index = 0;
  bool final = true;
};

using PairsRenderer = std::vector<uint8_t> (*)(uint64_t request_id, const PairsAnswer& answer);

}  // namespace recon::daemon
