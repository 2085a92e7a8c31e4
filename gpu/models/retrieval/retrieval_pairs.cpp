// Pair selection on the GPU: the B×B cosine similarity of global embeddings and each image's top-k
// most similar other images, as one graph (normalise, G·Gᵀ, diagonal to −inf, top-k).
#include <algorithm>
#include <string>
#include <utility>

#include "gpu/graph.h"
#include "gpu/models/retrieval/retrieval.h"
#include "gpu/models/retrieval/retrieval_kernels.h"
#include "gpu/ops/l2_normalize.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/matmul.h"
#include "gpu/ops/topk.h"

namespace recon::gpu {

Result<PairCandidates> select_top_pairs(Runtime& rt, const Tensor& global, int k) {
  if (!global.defined() || global.dtype() != DType::kF32 || global.shape().size() != 2) {
    return invalid_argument("top_pairs: global must be an f32 [B, D] tensor");
  }
  const int64_t images = global.shape()[0], dim = global.shape()[1];
  if (images < 2 || dim < 1)
    return invalid_argument("top_pairs: needs at least 2 images, got " + shape_string(global.shape()));
  if (k < 1 || k >= images || k > ops::kMaxTopK) {
    return invalid_argument("top_pairs: k = " + std::to_string(k) + " must be in [1, min(B − 1, " +
                            std::to_string(ops::kMaxTopK) + ")] for B = " + std::to_string(images));
  }
  if (static_cast<uint64_t>(images * images) * sizeof(float) > ops::max_binding_bytes()) {
    return invalid_argument("top_pairs: a " + std::to_string(images) +
                            "² similarity matrix exceeds one storage binding");
  }

  PairCandidates out;
  RECON_ASSIGN_OR_RETURN(Tensor unit, Tensor::empty(rt, DType::kF32, global.shape()));
  RECON_ASSIGN_OR_RETURN(Tensor masked, Tensor::empty(rt, DType::kF32, {images, images}));
  RECON_ASSIGN_OR_RETURN(out.similarity, Tensor::empty(rt, DType::kF32, {images, images}));
  RECON_ASSIGN_OR_RETURN(out.indices, Tensor::empty(rt, DType::kI32, {images, k}));
  RECON_ASSIGN_OR_RETURN(out.scores, Tensor::empty(rt, DType::kF32, {images, k}));

  Graph g(rt);
  // Cosine similarity whatever the input's norms (the retrieval embeddings are unit already).
  RECON_RETURN_IF_ERROR(ops::l2_normalize(g, global, unit, 1e-12f));
  ops::MatmulOptions o;
  o.transpose_b = true;
  o.path = ops::GemmPath::kScalar;
  RECON_RETURN_IF_ERROR(ops::matmul(g, rt.caps(), unit, unit, out.similarity, o));
  RECON_RETURN_IF_ERROR(retrieval::exclude_self(g, out.similarity, masked));
  RECON_RETURN_IF_ERROR(ops::topk(g, masked, out.scores, out.indices, k));
  RECON_RETURN_IF_ERROR(g.run());
  return out;
}

Result<HostPairCandidates> PairCandidates::to_host(Runtime& rt) const {
  if (!similarity.defined() || !indices.defined() || !scores.defined()) {
    return invalid_argument("PairCandidates::to_host: undefined tensors");
  }
  HostPairCandidates h;
  h.images = similarity.shape()[0];
  h.k = indices.shape()[1];
  h.similarity.resize(static_cast<size_t>(similarity.numel()));
  h.indices.resize(static_cast<size_t>(indices.numel()));
  h.scores.resize(static_cast<size_t>(scores.numel()));
  RECON_RETURN_IF_ERROR(similarity.download(rt, h.similarity.data(), h.similarity.size() * sizeof(float)));
  RECON_RETURN_IF_ERROR(indices.download(rt, h.indices.data(), h.indices.size() * sizeof(int32_t)));
  RECON_RETURN_IF_ERROR(scores.download(rt, h.scores.data(), h.scores.size() * sizeof(float)));
  return h;
}

std::vector<RetrievalPair> HostPairCandidates::ranked_pairs() const {
  std::vector<RetrievalPair> pairs;
  pairs.reserve(indices.size());
  for (int64_t i = 0; i < images; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      const size_t e = static_cast<size_t>(i * k + j);
      pairs.push_back({static_cast<int32_t>(i), indices[e], scores[e]});
    }
  }
  return pairs;
}

std::vector<RetrievalPair> HostPairCandidates::unique_pairs() const {
  std::vector<RetrievalPair> pairs = ranked_pairs();
  for (RetrievalPair& p : pairs) {
    if (p.a > p.b) std::swap(p.a, p.b);
  }
  std::sort(pairs.begin(), pairs.end(),
            [](const RetrievalPair& x, const RetrievalPair& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
  // (i, j) and (j, i) carry the same similarity up to the GEMM's summation order; keep the first.
  pairs.erase(std::unique(pairs.begin(), pairs.end(),
                          [](const RetrievalPair& x, const RetrievalPair& y) { return x.a == y.a && x.b == y.b; }),
              pairs.end());
  return pairs;
}

}  // namespace recon::gpu
