// RetrievalModel: loading and encode(). One graph per call, split into chunks of whole images so
// that every operand of the retrieval kernels fits one storage binding (64 full-size images of
// 768 tokens × 1024 f32 are 192 MiB); the chunks reuse one set of scratch tensors.
#include <algorithm>
#include <string>

#include "gpu/graph.h"
#include "gpu/models/retrieval/retrieval.h"
#include "gpu/models/retrieval/retrieval_kernels.h"
#include "gpu/models/retrieval/retrieval_weights.h"
#include "gpu/ops/cast.h"
#include "gpu/ops/elementwise.h"
#include "gpu/ops/l2_normalize.h"
#include "gpu/ops/layer_norm.h"
#include "gpu/ops/layout.h"
#include "gpu/ops/linear.h"
#include "gpu/ops/matmul.h"
#include "gpu/ops/unary.h"

namespace recon::gpu {
namespace {

// torch.nn.functional.normalize's default eps (weighted_spoc).
constexpr float kNormalizeEps = 1e-12f;

Result<Tensor> scratch(Runtime& rt, DType dtype, const Shape& shape) {
  return Tensor::empty(rt, dtype, shape, MemoryRole::kActivations);
}

// Rows [r0, r1) of a tensor viewed as [rows, ...rest].
Result<Tensor> rows(const Tensor& t, int64_t r0, int64_t r1) {
  if (r0 == 0 && r1 == t.shape()[0]) return t;
  return t.slice_rows(r0, r1);
}

// y = (x − m)·p: centred in fp32 against m = mean_hi + mean_lo (retrieval_weights.h says why), then
// an fp32 GEMM (docs/RETRIEVAL.md has the error against the official float64 path).
Status whiten(Graph& g, const Capabilities& caps, const WhitenerWeights& w, const Tensor& x, const Tensor& centred,
              const Tensor& y) {
  RECON_RETURN_IF_ERROR(ops::binary_sub(g, x, w.mean_hi, centred));
  RECON_RETURN_IF_ERROR(ops::binary_sub(g, centred, w.mean_lo, centred));
  ops::MatmulOptions o;
  o.path = ops::GemmPath::kScalar;  // fp32 operands; never the fp16 tensor-core path
  return ops::matmul(g, caps, centred, w.projection, y, o);
}

}  // namespace

RetrievalModel::RetrievalModel(Runtime& rt, RetrievalConfig config, std::unique_ptr<RetrievalWeights> weights)
    : rt_(rt), config_(std::move(config)), weights_(std::move(weights)) {}

RetrievalModel::~RetrievalModel() = default;

Result<std::unique_ptr<RetrievalModel>> RetrievalModel::load(Runtime& rt, const std::string& path) {
  RECON_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(path));
  Result<std::unique_ptr<RetrievalModel>> m = from_safetensors(rt, file);
  if (!m.is_ok()) return m.status().with_context(path);
  return m;
}

Result<std::unique_ptr<RetrievalModel>> RetrievalModel::from_safetensors(Runtime& rt, const SafetensorsFile& file) {
  RECON_ASSIGN_OR_RETURN(LoadedRetrieval loaded, load_retrieval_weights(rt, file));
  return std::unique_ptr<RetrievalModel>(new RetrievalModel(rt, std::move(loaded.config), std::move(loaded.weights)));
}

Result<RetrievalOutput> RetrievalModel::encode(const Tensor& tokens_in) {
  if (!tokens_in.defined()) return invalid_argument("retrieval encode: tokens are undefined");
  if (tokens_in.dtype() != DType::kF32 && tokens_in.dtype() != DType::kF16) {
    return invalid_argument(std::string("retrieval encode: tokens must be f32 or f16, got ") +
                            dtype_name(tokens_in.dtype()));
  }
  Shape s = tokens_in.shape();
  if (s.size() == 2) s.insert(s.begin(), 1);
  if (s.size() != 3 || s[0] < 1 || s[1] < 1 || s[2] != config_.dim) {
    return invalid_argument("retrieval encode: tokens " + shape_string(tokens_in.shape()) + " must be [B, N, " +
                            std::to_string(config_.dim) + "] or [N, " + std::to_string(config_.dim) + "]");
  }
  const int64_t images = s[0], n = s[1], d = s[2], dp = config_.out_dim();
  const int64_t keep = config_.kept_tokens(n);
  if (keep < 1) {
    return invalid_argument("retrieval encode: nfeat " + std::to_string(config_.nfeat) + " keeps no token of " +
                            std::to_string(n));
  }
  RECON_ASSIGN_OR_RETURN(Tensor tokens, tokens_in.reshape(s));

  RetrievalOutput out;
  RECON_ASSIGN_OR_RETURN(out.features, scratch(rt_, DType::kF32, {images, keep, dp}));
  RECON_ASSIGN_OR_RETURN(out.attention, scratch(rt_, DType::kF32, {images, keep}));
  RECON_ASSIGN_OR_RETURN(out.token_index, scratch(rt_, DType::kI32, {images, keep}));
  RECON_ASSIGN_OR_RETURN(out.global, scratch(rt_, DType::kF32, {images, dp}));

  // The outputs are bound whole; the token-sized work is split into chunks of images whose slabs
  // each fit one binding (the input's row views aligned).
  if (out.features.bytes() > ops::max_binding_bytes()) {
    return invalid_argument("retrieval encode: " + std::to_string(images) + " images × " + std::to_string(keep) +
                            " features × " + std::to_string(dp) + " exceed one storage binding; encode fewer images");
  }
  int64_t widest = std::max(d, dp);
  for (int64_t h : config_.hdims) widest = std::max(widest, h);
  RECON_ASSIGN_OR_RETURN(int64_t chunk,
                         ops::rows_per_dispatch({static_cast<uint64_t>(n * d) * dtype_size(tokens.dtype()),
                                                 static_cast<uint64_t>(n * widest) * sizeof(float)},
                                                images));
  const int64_t r = chunk * n;  // token rows per chunk

  // Scratch for one chunk, reused by every chunk (the graph orders the reuse with barriers).
  const RetrievalWeights& w = *weights_;
  Tensor x32, centred, white, attn, centred_post, feat_post, global_sum;
  if (tokens.dtype() == DType::kF16) {
    RECON_ASSIGN_OR_RETURN(x32, scratch(rt_, DType::kF32, {r, d}));
  }
  if (w.prewhiten) {
    RECON_ASSIGN_OR_RETURN(centred, scratch(rt_, DType::kF32, {r, d}));
    RECON_ASSIGN_OR_RETURN(white, scratch(rt_, DType::kF32, {r, d}));
  }
  std::vector<Tensor> hidden, normed;
  for (size_t i = 0; i < w.projector.size(); ++i) {
    RECON_ASSIGN_OR_RETURN(Tensor h, scratch(rt_, DType::kF32, {r, config_.hdims[i]}));
    hidden.push_back(std::move(h));
    if (i + 1 < w.projector.size()) {
      RECON_ASSIGN_OR_RETURN(Tensor nrm, scratch(rt_, DType::kF32, {r, config_.hdims[i]}));
      normed.push_back(std::move(nrm));
    }
  }
  RECON_ASSIGN_OR_RETURN(attn, scratch(rt_, DType::kF32, {r}));
  if (w.postwhiten) {
    RECON_ASSIGN_OR_RETURN(centred_post, scratch(rt_, DType::kF32, {r, dp}));
    RECON_ASSIGN_OR_RETURN(feat_post, scratch(rt_, DType::kF32, {r, dp}));
  }
  RECON_ASSIGN_OR_RETURN(global_sum, scratch(rt_, DType::kF32, {images, dp}));

  Graph g(rt_);
  const Capabilities& caps = rt_.caps();
  RECON_ASSIGN_OR_RETURN(Tensor token_rows, tokens.reshape({images * n, d}));
  for (int64_t b0 = 0; b0 < images; b0 += chunk) {
    const int64_t b1 = std::min(images, b0 + chunk), nb = b1 - b0, nr = nb * n;
    RECON_ASSIGN_OR_RETURN(Tensor x, rows(token_rows, b0 * n, b1 * n));
    if (x32.defined()) {
      RECON_ASSIGN_OR_RETURN(Tensor xc, rows(x32, 0, nr));
      RECON_RETURN_IF_ERROR(ops::cast(g, x, xc));
      x = xc;
    }
    Tensor h = x;
    if (w.prewhiten) {
      RECON_ASSIGN_OR_RETURN(Tensor c, rows(centred, 0, nr));
      RECON_ASSIGN_OR_RETURN(Tensor y, rows(white, 0, nr));
      RECON_RETURN_IF_ERROR(whiten(g, caps, *w.prewhiten, x, c, y));
      h = y;
    }
    const Tensor prewhitened = h;
    for (size_t i = 0; i < w.projector.size(); ++i) {
      const ProjectorLayer& layer = w.projector[i];
      const bool last = i + 1 == w.projector.size();
      RECON_ASSIGN_OR_RETURN(Tensor lin, rows(hidden[i], 0, nr));
      ops::Epilogue e;
      if (last && config_.residual) e.residual = prewhitened;
      RECON_RETURN_IF_ERROR(ops::linear(g, caps, h, layer.weight, Arg(layer.bias), lin, e, ops::GemmPath::kScalar));
      h = lin;
      if (!last) {
        RECON_ASSIGN_OR_RETURN(Tensor nrm, rows(normed[i], 0, nr));
        RECON_RETURN_IF_ERROR(ops::layer_norm(g, lin, Arg(layer.norm_weight), Arg(layer.norm_bias), nrm,
                                              static_cast<float>(config_.layer_norm_eps)));
        RECON_RETURN_IF_ERROR(ops::gelu(g, nrm, nrm));
        h = nrm;
      }
    }
    // Attention is the norm of the projector output, before post-whitening (official order).
    RECON_ASSIGN_OR_RETURN(Tensor a, rows(attn, 0, nr));
    RECON_RETURN_IF_ERROR(retrieval::token_norm(g, h, a));
    Tensor feat = h;
    if (w.postwhiten) {
      RECON_ASSIGN_OR_RETURN(Tensor c, rows(centred_post, 0, nr));
      RECON_ASSIGN_OR_RETURN(Tensor y, rows(feat_post, 0, nr));
      RECON_RETURN_IF_ERROR(whiten(g, caps, *w.postwhiten, h, c, y));
      feat = y;
    }
    RECON_ASSIGN_OR_RETURN(Tensor attn_img, a.reshape({nb, n}));
    RECON_ASSIGN_OR_RETURN(Tensor feat_img, feat.reshape({nb, n, dp}));
    RECON_RETURN_IF_ERROR(retrieval::select_top(g, attn_img, out.attention, out.token_index, b0));
    RECON_RETURN_IF_ERROR(retrieval::gather_tokens(g, feat_img, out.token_index, out.features, b0));

    // weighted SPoC, unnormalised: Σ_n attn[n]·feat[n] per image as a batched [1, N]·[N, D'] product
    // written at this chunk's rows of global_sum.
    ops::MatmulGeometry geo;
    geo.m = 1, geo.n = dp, geo.k = n, geo.batch = nb;
    geo.lda = n, geo.ldb = dp, geo.ldc = dp;
    geo.stride_a = n, geo.stride_b = n * dp, geo.stride_c = dp;
    geo.offset_c = b0 * dp;
    ops::MatmulOptions o;
    o.path = ops::GemmPath::kScalar;
    RECON_RETURN_IF_ERROR(ops::matmul_strided(g, caps, a, feat, global_sum, geo, o));
  }
  RECON_RETURN_IF_ERROR(ops::l2_normalize(g, global_sum, out.global, kNormalizeEps));
  RECON_RETURN_IF_ERROR(g.run());
  return out;
}

Result<PairCandidates> RetrievalModel::top_pairs(const Tensor& global, int k) {
  return select_top_pairs(rt_, global, k);
}

}  // namespace recon::gpu
