// The exhaustive matcher as one recorded graph (docs/MATCHING.md):
//   forward   match_nn (queries = A pixels qpix, database = B, K = top_k) → match_topk: K best per
//             query, in batches of queries small enough for the partial-results buffer
//   reverse   (reciprocal) match_nn (queries = the Q·K candidate B pixels, database = A) →
//             match_topk mode 1: keep[c] = the query's A pixel is among candidate c's K best
//   filter    match_mutual: reciprocity and confidence, candidates sorted by B pixel per row
//   compact   ordered compaction with the border filter → coordinates, pts3d, confidences
#include <algorithm>
#include <string>

#include "gpu/models/match/match.h"
#include "gpu/models/match/match_kernels.h"

namespace recon::gpu {

using namespace match_detail;

namespace {

constexpr int64_t kMaxCandidates = int64_t{1} << 23;     // Q · K
constexpr int64_t kPartBudgetBytes = int64_t{64} << 20;  // partial lists of one batch

// Entries match_nn writes for a batch of exactly `count` queries.
int64_t batch_entries(const NnGeometry& geo, int64_t count, int64_t n_db) {
  const auto n_chunks = static_cast<uint32_t>((n_db + geo.ch - 1) / geo.ch);
  return int64_t{nn_slices(geo, static_cast<uint32_t>(count), n_chunks)} * count * geo.k;
}

// The largest batch (halving from `total`) whose partial lists fit the budget.
int64_t batch_size(const NnGeometry& geo, int64_t total, int64_t n_db, int64_t budget_entries) {
  int64_t b = total;
  while (b > 1 && batch_entries(geo, b, n_db) > budget_entries) b = (b + 1) / 2;
  return b;
}

}  // namespace

ExhaustiveMatcher::ExhaustiveMatcher(Runtime& rt, const MatchShape& shape, const ExhaustiveMatchOptions& options)
    : rt_(rt), shape_(shape), options_(options) {}

ExhaustiveMatcher::~ExhaustiveMatcher() = default;

Result<std::unique_ptr<ExhaustiveMatcher>> ExhaustiveMatcher::create(Runtime& rt, const MatchShape& shape,
                                                                     const ExhaustiveMatchOptions& options) {
  RECON_RETURN_IF_ERROR(check_shape(rt, shape));
  const int64_t na = shape.h_a * shape.w_a, nb = shape.h_b * shape.w_b;
  if (options.top_k < 1 || options.top_k > kMaxMatchTopK) {
    return invalid_argument("top_k must be in 1.." + std::to_string(kMaxMatchTopK) + ", got " +
                            std::to_string(options.top_k));
  }
  if (options.top_k > nb || (options.reciprocal && options.top_k > na)) {
    return invalid_argument("top_k = " + std::to_string(options.top_k) + " exceeds the pixels of a map");
  }
  if (!(options.confidence_threshold >= 0)) return invalid_argument("confidence_threshold must be ≥ 0");
  if (options.confidence_threshold > 0 && !shape.conf) {
    return invalid_argument("confidence_threshold > 0 needs the conf maps (MatchMaps::conf_a, conf_b)");
  }
  if (options.border < 0) return invalid_argument("border must be ≥ 0, got " + std::to_string(options.border));
  if (options.tuning.grid < 0 || options.tuning.grid > 65535) return invalid_argument("tuning.grid outside 0..65535");
  if (options.tuning.batch < 0) return invalid_argument("tuning.batch must be ≥ 0");
  std::vector<int32_t> queries;
  if (!options.query_pixels.empty()) {
    queries = options.query_pixels;
    for (int32_t p : queries) {
      if (p < 0 || p >= na) {
        return invalid_argument("query pixel " + std::to_string(p) + " outside 0.." + std::to_string(na - 1));
      }
    }
    std::sort(queries.begin(), queries.end());
    queries.erase(std::unique(queries.begin(), queries.end()), queries.end());
  } else {
    if (options.subsample < 1) {
      return invalid_argument("subsample must be ≥ 1, got " + std::to_string(options.subsample));
    }
    queries = match_seed_grid(shape.h_a, shape.w_a, options.subsample);
    if (queries.empty()) return invalid_argument("no query pixels: the subsample grid misses the map");
  }
  if (static_cast<int64_t>(queries.size()) * options.top_k > kMaxCandidates) {
    return invalid_argument(std::to_string(queries.size()) + " queries × top_k " + std::to_string(options.top_k) +
                            " exceed " + std::to_string(kMaxCandidates) + " candidates; subsample the queries");
  }
  auto m = std::unique_ptr<ExhaustiveMatcher>(new ExhaustiveMatcher(rt, shape, options));
  RECON_RETURN_IF_ERROR(m->build(queries));
  return m;
}

Status ExhaustiveMatcher::build(const std::vector<int32_t>& query_pixels) {
  const MatchShape& s = shape_;
  const int64_t na = s.h_a * s.w_a, nb = s.h_b * s.w_b;
  const int64_t K = options_.top_k;
  queries_ = static_cast<int64_t>(query_pixels.size());
  const int64_t cands = queries_ * K;
  const NnGeometry geo = nn_geometry(rt_.caps(), s.dim, options_.top_k, options_.tuning);
  const int64_t budget_entries =
      std::min<int64_t>(kPartBudgetBytes, static_cast<int64_t>(rt_.caps().max_storage_buffer_range)) / 8;
  int64_t fwd_batch = batch_size(geo, queries_, nb, budget_entries);
  int64_t rev_batch = options_.reciprocal ? batch_size(geo, cands, na, budget_entries) : 0;
  if (options_.tuning.batch > 0) {
    fwd_batch = std::min<int64_t>(fwd_batch, options_.tuning.batch);
    rev_batch = std::min<int64_t>(rev_batch, options_.tuning.batch);
  }
  int64_t part_entries = batch_entries(geo, fwd_batch, nb);
  if (options_.reciprocal) part_entries = std::max(part_entries, batch_entries(geo, rev_batch, na));

  graph_ = std::make_unique<Graph>(rt_);
  Graph& g = *graph_;
  const InputSlots in = add_input_slots(g, s);
  auto alloc = [&](DType dtype, const Shape& shape) -> Result<Tensor> {
    RECON_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(rt_, dtype, shape));
    keep_.push_back(t);
    return t;
  };
  RECON_ASSIGN_OR_RETURN(Tensor qpix, Tensor::from_host(rt_, DType::kI32, {queries_}, query_pixels.data(),
                                                        query_pixels.size() * sizeof(int32_t)));
  keep_.push_back(qpix);
  RECON_ASSIGN_OR_RETURN(Tensor part, alloc(DType::kI32, {part_entries * 2}));
  RECON_ASSIGN_OR_RETURN(Tensor top_idx, alloc(DType::kI32, {cands}));
  RECON_ASSIGN_OR_RETURN(Tensor top_score, alloc(DType::kF32, {cands}));
  RECON_ASSIGN_OR_RETURN(Tensor cand_b, alloc(DType::kI32, {cands}));
  RECON_ASSIGN_OR_RETURN(Tensor cand_s, alloc(DType::kF32, {cands}));
  RECON_ASSIGN_OR_RETURN(Tensor blocks, alloc(DType::kI32, {(cands + kCompactBlock - 1) / kCompactBlock}));
  RECON_ASSIGN_OR_RETURN(Tensor keep, alloc(DType::kI32, {options_.reciprocal ? cands : 1}));
  RECON_ASSIGN_OR_RETURN(Tensor dummy, alloc(DType::kI32, {4}));
  RECON_ASSIGN_OR_RETURN(result_, allocate_result(rt_, s, cands));
  const Tensor& state = result_.state;  // slice counts only

  g.timestamp("forward");
  for (int64_t q0 = 0; q0 < queries_; q0 += fwd_batch) {
    const int64_t n = std::min(fwd_batch, queries_ - q0);
    NnArgs nn;
    nn.qmap = in.desc_a;
    nn.dbmap = in.desc_b;
    nn.list = qpix;
    nn.xy = qpix;
    nn.state = state;
    nn.part = part;
    nn.indirect = false;
    nn.n_query = na;
    nn.n_db = nb;
    nn.dim = s.dim;
    nn.count_fixed = static_cast<uint32_t>(n);
    nn.q_begin = static_cast<uint32_t>(q0);
    nn.meta_index = 0;
    RECON_RETURN_IF_ERROR(record_nn(g, geo, nn));
    RECON_RETURN_IF_ERROR(record_topk(g, geo.k, 0, part, state, top_idx, top_score, qpix, dummy,
                                      static_cast<uint32_t>(n), static_cast<uint32_t>(q0), 0, 1));
  }
  if (options_.reciprocal) {
    g.timestamp("reverse");
    for (int64_t c0 = 0; c0 < cands; c0 += rev_batch) {
      const int64_t n = std::min(rev_batch, cands - c0);
      NnArgs nn;
      nn.qmap = in.desc_b;
      nn.dbmap = in.desc_a;
      nn.list = top_idx;
      nn.xy = top_idx;
      nn.state = state;
      nn.part = part;
      nn.indirect = false;
      nn.n_query = nb;
      nn.n_db = na;
      nn.dim = s.dim;
      nn.count_fixed = static_cast<uint32_t>(n);
      nn.q_begin = static_cast<uint32_t>(c0);
      nn.meta_index = 1;
      RECON_RETURN_IF_ERROR(record_nn(g, geo, nn));
      RECON_RETURN_IF_ERROR(record_topk(g, geo.k, 1, part, state, dummy, dummy, qpix, keep, static_cast<uint32_t>(n),
                                        static_cast<uint32_t>(c0), 1, static_cast<uint32_t>(K)));
    }
  }

  g.timestamp("filter");
  const bool use_conf = options_.confidence_threshold > 0;
  RECON_RETURN_IF_ERROR(record_mutual(g, qpix, top_idx, top_score, options_.reciprocal ? Arg(keep) : Arg(top_idx),
                                      use_conf ? in.conf_a : Arg(top_score), use_conf ? in.conf_b : Arg(top_score),
                                      cand_b, cand_s, queries_, K, options_.reciprocal, use_conf,
                                      options_.confidence_threshold));
  CompactArgs c;
  c.cand_b = cand_b;
  c.cand_s = cand_s;
  c.qpix = qpix;
  c.blocks = blocks;
  c.count = result_.count;
  c.idx_a = result_.idx_a;
  c.idx_b = result_.idx_b;
  c.score = result_.score;
  c.mode = 1;
  c.n = cands;
  c.k = K;
  c.w_a = s.w_a;
  c.h_a = s.h_a;
  c.w_b = s.w_b;
  c.h_b = s.h_b;
  c.border = options_.border;
  RECON_RETURN_IF_ERROR(record_compact(g, c));
  return record_decorate(g, result_, s, in.pts3d_a, in.pts3d_b, in.conf_a, in.conf_b);
}

Result<MatchResult> ExhaustiveMatcher::run(const Tensor& desc_a, const Tensor& desc_b, const MatchMaps& maps) {
  RECON_RETURN_IF_ERROR(bind_inputs(*graph_, shape_, desc_a, desc_b, maps));
  RECON_RETURN_IF_ERROR(graph_->run());
  return result_;
}

}  // namespace recon::gpu
