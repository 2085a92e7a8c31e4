// Retrieval embeddings (docs/RETRIEVAL.md, spec §8): the official MASt3R RetrievalModel head on
// encoder tokens, and GPU pair selection for SfM.
//
//   tokens [B, N, D] ─ prewhiten ─ projector (+ residual) ─┬─ attention = ‖·‖₂ per token
//                                                           └─ postwhiten ─ features
//   local:  the top-nfeat tokens by attention (features, attention, token index), best first
//   global: L2-normalised attention-weighted sum of the features over all N tokens (weighted SPoC)
//   pairs:  B×B cosine similarity of the global embeddings, per image its top-k other images
//
// A Whitener is y = (x − m)·P. The official code runs it in float64; here the centring (against m
// kept as two fp32 parts) and the product (P rounded to fp32 at load) run in fp32 on the GPU; the
// measured error against float64 is in docs/RETRIEVAL.md. Everything after the input cast is fp32; the tokens may be
// f32 or f16 (cast to f32 first). Misuse returns INVALID_ARGUMENT; nothing here aborts on bad input.
// Not here: ASMK with the k-means codebook (the official Retriever's scoring).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpu/runtime.h"
#include "gpu/status.h"
#include "gpu/tensor.h"
#include "gpu/weights/safetensors.h"

namespace recon::gpu {

// The checkpoint's `args` that shape the head (safetensors metadata "retrieval.config", JSON).
struct RetrievalConfig {
  int64_t dim = 0;               // backbone width D (enc_embed_dim), from prewhiten.m or projector.0
  bool prewhiten = true;         // prewhiten.m [1, D], prewhiten.p [D, D]; false: Identity
  std::vector<int64_t> hdims;    // projector widths; empty: Identity
  bool residual = false;         // projector(x) + x (needs hdims.back() == D)
  bool postwhiten = false;       // postwhiten.m [1, D'], postwhiten.p [D', D']
  double nfeat = 300;            // ≥ 1: tokens kept; in [-1, 0): that fraction of N (official how_select_local)
  double layer_norm_eps = 1e-5;  // nn.LayerNorm default, the projector's LayerNorms

  int64_t out_dim() const { return hdims.empty() ? dim : hdims.back(); }  // D'
  // Tokens kept for an image of n tokens: min(nfeat, n), or int(−nfeat·n) for a fraction.
  int64_t kept_tokens(int64_t n) const;
  Status validate() const;
  static Result<RetrievalConfig> from_json(std::string_view json);
  std::string to_json() const;
};

inline constexpr const char* kRetrievalMetadataKey = "retrieval.config";

// Device outputs of encode(); fresh tensors per call, owned by the caller.
struct RetrievalOutput {
  Tensor features;     // f32 [B, K, D'] post-whitened features of the top-K tokens, best first
  Tensor attention;    // f32 [B, K] their attention (L2 norm of the projector output), descending
  Tensor token_index;  // i32 [B, K] their token indices in [0, N); equal attention: lower index first
  Tensor global;       // f32 [B, D'] L2-normalised weighted-SPoC embedding over all N tokens
};

// One candidate edge of the pair graph.
struct RetrievalPair {
  int32_t a = 0, b = 0;  // image indices, a < b in unique_pairs()
  float score = 0;       // cosine similarity of the global embeddings
};

// Host copy of a PairCandidates.
struct HostPairCandidates {
  int64_t images = 0, k = 0;
  std::vector<float> similarity;  // [B·B] row-major
  std::vector<int32_t> indices;   // [B·k]: row i = the k images most similar to i (never i), best first
  std::vector<float> scores;      // [B·k]
  // Every (i, indices[i][j]) with its score, row by row, each row best first: [B·k].
  std::vector<RetrievalPair> ranked_pairs() const;
  // The union of every (i, indices[i][j]) as undirected pairs a < b, sorted by (a, b).
  std::vector<RetrievalPair> unique_pairs() const;
};

struct PairCandidates {
  Tensor similarity;  // f32 [B, B] = G·Gᵀ
  Tensor indices;     // i32 [B, k] most similar other images, descending score, ties to the lower index
  Tensor scores;      // f32 [B, k]
  Result<HostPairCandidates> to_host(Runtime& rt) const;
};

struct RetrievalWeights;  // device weights, gpu/models/retrieval/retrieval_weights.h

class RetrievalModel {
 public:
  // Reads the official key names (prewhiten.m/p, projector.<i>.weight/bias, postwhiten.m/p) from a
  // safetensors file written by tools/convert-checkpoint --retrieval. Missing, unexpected or
  // mis-shaped tensors and a config that contradicts them are refused by name.
  static Result<std::unique_ptr<RetrievalModel>> load(Runtime& rt, const std::string& path);
  static Result<std::unique_ptr<RetrievalModel>> from_safetensors(Runtime& rt, const SafetensorsFile& file);
  ~RetrievalModel();

  // tokens: f32 or f16 [B, N, D] (or [N, D] for one image), the encoder output after enc_norm.
  Result<RetrievalOutput> encode(const Tensor& tokens);

  // Pair selection: global f32 [B, D'] (unit rows, e.g. RetrievalOutput::global), 1 ≤ k < B.
  Result<PairCandidates> top_pairs(const Tensor& global, int k);

  const RetrievalConfig& config() const { return config_; }

 private:
  RetrievalModel(Runtime& rt, RetrievalConfig config, std::unique_ptr<RetrievalWeights> weights);

  Runtime& rt_;
  RetrievalConfig config_;
  std::unique_ptr<RetrievalWeights> weights_;
};

// The pair selection on its own (RetrievalModel::top_pairs calls it).
Result<PairCandidates> select_top_pairs(Runtime& rt, const Tensor& global, int k);

}  // namespace recon::gpu
