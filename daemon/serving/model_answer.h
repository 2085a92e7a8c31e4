// ModelAnswer: what a model's instance answers for one request — the result it stored, plus for
// retrieval with top_k the pairs it chose — before the transport renders it as the answer of the
// verb that asked (the generic Infer's InferResult, or a released verb's own body). The instance
// does not know which verb that was: the transport names the renderer at admission
// (RequestContext::render).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "daemon/server/result_store.h"

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

}  // namespace recon::daemon
