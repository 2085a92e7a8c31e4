// PendingRetrieval and RetrievalResult: the answer to Client::encode_retrieval — one result
// handle with the retrieval outputs of every image ("embeddings" f32 [N, D] unit rows,
// "features" f32 [N, K, D], "attention" f32 [N, K], "token_index" i32 [N, K]; fetched lazily)
// and, with top_k > 0, each image's most similar others.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "recon/client/export.h"
#include "recon/client/result.h"
#include "recon/client/types.h"

namespace recon::client {

struct RetrievalResult {
  Result outputs;
  // For image i, entries [i·top_k, (i+1)·top_k): (i, j) with j among its top_k most similar
  // other images, best first, and the cosine similarity of their embeddings.
  std::vector<ImagePair> pairs;
  std::vector<float> scores;
};

// Client::encode_retrieval's answer before it has arrived: pending.h.
using PendingRetrieval = Pending<RetrievalResult>;

}  // namespace recon::client
