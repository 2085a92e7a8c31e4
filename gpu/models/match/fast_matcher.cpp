// The fast reciprocal nearest-neighbour matcher as one recorded graph (docs/MATCHING.md):
//   init                 seeds → xy1, xy2 = -1, all notyet, active list 0 = every seed
//   2 · max_iter steps   match_nn (the step's distinct query pixels → per-slice partial NN) then
//                        match_update (each active seed's NN, convergence test against its current
//                        pixel, next active list and next distinct query pixels)
//   merge                converged seeds → per-pixel table of A → ordered compaction with the border
//                        filter → coordinates, gathered pts3d and confidences
// Step k reads the active count state[k] written by step k − 1, so converged seeds cost nothing
// in later steps although every step is recorded. Seeds whose walks meet share one search (the
// de-duplication, docs/MATCHING.md); tuning.dedup = 1 searches once per active seed instead.
#include <algorithm>
#include <string>

#include "gpu/models/match/match.h"
#include "gpu/models/match/match_kernels.h"

namespace recon::gpu {

using namespace match_detail;

FastMatcher::FastMatcher(Runtime& rt, const MatchShape& shape, const FastMatchOptions& options)
    : rt_(rt), shape_(shape), options_(options) {}

FastMatcher::~FastMatcher() = default;

Result<std::unique_ptr<FastMatcher>> FastMatcher::create(Runtime& rt, const MatchShape& shape,
                                                         const FastMatchOptions& options) {
  RECON_RETURN_IF_ERROR(check_shape(rt, shape));
  if (options.subsample < 1) return invalid_argument("subsample must be ≥ 1, got " + std::to_string(options.subsample));
  if (options.max_iter < 1 || options.max_iter > kMaxFastMatchIter) {
    return invalid_argument("max_iter must be in 1.." + std::to_string(kMaxFastMatchIter) + ", got " +
                            std::to_string(options.max_iter));
  }
  if (options.border < 0) return invalid_argument("border must be ≥ 0, got " + std::to_string(options.border));
  for (int grid : {options.tuning.grid, options.tuning.tail_grid, options.tuning.update_grid}) {
    if (grid < 0 || grid > 65535)
      return invalid_argument("tuning grids must be in 0..65535, got " + std::to_string(grid));
  }
  auto m = std::unique_ptr<FastMatcher>(new FastMatcher(rt, shape, options));
  RECON_RETURN_IF_ERROR(m->build());
  return m;
}

Status FastMatcher::build() {
  const MatchShape& s = shape_;
  const int S = options_.subsample;
  const int64_t half = S / 2;
  const int64_t seeds_y = s.h_a > half ? (s.h_a - half + S - 1) / S : 0;
  const int64_t seeds_x = s.w_a > half ? (s.w_a - half + S - 1) / S : 0;
  seeds_ = seeds_x * seeds_y;
  if (seeds_ == 0) {
    return invalid_argument("no seeds: the grid starts at subsample / 2 = " + std::to_string(half) + ", outside the " +
                            std::to_string(s.h_a) + "x" + std::to_string(s.w_a) + " map");
  }
  const int64_t na = s.h_a * s.w_a, nb = s.h_b * s.w_b;
  const NnGeometry geo = nn_geometry(rt_.caps(), s.dim, 1, options_.tuning);
  // Iteration 1 searches every seed both ways; later steps only what still moves (tail_geo), and
  // empty steps cost their workgroups' start: a CPU device (lavapipe) runs them on few workgroups.
  const bool cpu = rt_.caps().device_type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  const MatchTuning& tuning = options_.tuning;
  NnGeometry tail_geo = geo;
  if (tuning.tail_grid > 0) tail_geo.grid = static_cast<uint32_t>(tuning.tail_grid);
  if (tuning.tail_grid == 0 && cpu) tail_geo.grid = 4;
  const int64_t update_default = cpu ? 4 : 2048;
  const auto update_grid =
      static_cast<uint32_t>(std::min<int64_t>(seeds_, tuning.update_grid > 0 ? tuning.update_grid : update_default));
  const int64_t part_entries =
      std::max({nn_partial_entries(geo, seeds_, na), nn_partial_entries(geo, seeds_, nb),
                nn_partial_entries(tail_geo, seeds_, na), nn_partial_entries(tail_geo, seeds_, nb)});
  if (part_entries * 8 > static_cast<int64_t>(rt_.caps().max_storage_buffer_range)) {
    return invalid_argument("too many seeds (" + std::to_string(seeds_) + ") for one dispatch's partial results");
  }

  graph_ = std::make_unique<Graph>(rt_);
  Graph& g = *graph_;
  const InputSlots in = add_input_slots(g, s);

  auto alloc = [&](DType dtype, const Shape& shape) -> Result<Tensor> {
    RECON_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(rt_, dtype, shape));
    keep_.push_back(t);
    return t;
  };
  FastLayout layout{seeds_, na, nb, tuning.dedup != 1};
  const auto range = static_cast<int64_t>(rt_.caps().max_storage_buffer_range);
  if (layout.list_words() * 4 > range) {
    return invalid_argument("too many seeds (" + std::to_string(seeds_) + ") for one binding of their lists");
  }
  // The tables must fit one binding; without them the same matches come from more searches.
  if (layout.table_words() * 4 > range) layout.dedup = false;
  RECON_ASSIGN_OR_RETURN(Tensor xy1, alloc(DType::kI32, {seeds_}));
  RECON_ASSIGN_OR_RETURN(Tensor xy2, alloc(DType::kI32, {seeds_}));
  RECON_ASSIGN_OR_RETURN(Tensor notyet, alloc(DType::kI32, {seeds_}));
  RECON_ASSIGN_OR_RETURN(Tensor score, alloc(DType::kF32, {seeds_}));
  RECON_ASSIGN_OR_RETURN(Tensor lists, alloc(DType::kI32, {layout.list_words()}));
  RECON_ASSIGN_OR_RETURN(Tensor tables, alloc(DType::kI32, {layout.table_words()}));
  RECON_ASSIGN_OR_RETURN(Tensor part, alloc(DType::kI32, {part_entries * 2}));
  RECON_ASSIGN_OR_RETURN(Tensor mark_b, alloc(DType::kI32, {na}));
  RECON_ASSIGN_OR_RETURN(Tensor mark_s, alloc(DType::kF32, {na}));
  RECON_ASSIGN_OR_RETURN(Tensor blocks, alloc(DType::kI32, {(na + kCompactBlock - 1) / kCompactBlock}));
  RECON_ASSIGN_OR_RETURN(result_, allocate_result(rt_, s, seeds_));
  result_.steps = 2 * options_.max_iter + 1;
  result_.dedup = layout.dedup;
  const Tensor& state = result_.state;

  g.timestamp("seeds");
  RECON_RETURN_IF_ERROR(record_init(g, xy1, xy2, notyet, lists, state, mark_b, tables, layout, seeds_x, S, s.w_a));

  for (int k = 0; k < 2 * options_.max_iter; ++k) {
    const bool step_a = k % 2 == 0;  // a: A[xy1] → B; b: B[xy2] → A
    if (k < 2) g.timestamp(k == 0 ? "iter1a" : "iter1b");
    if (k >= 2 && step_a) g.timestamp("iter" + std::to_string(k / 2 + 1));
    NnArgs nn;
    nn.qmap = step_a ? in.desc_a : in.desc_b;
    nn.dbmap = step_a ? in.desc_b : in.desc_a;
    nn.list = lists;
    nn.xy = step_a ? xy1 : xy2;
    nn.state = state;
    nn.part = part;
    // With de-duplication the step's query list holds pixels; else its seed list holds seeds.
    nn.indirect = !layout.dedup;
    nn.q_begin = layout.dedup ? layout.query_list(k) : layout.seed_list(k);
    nn.count_index = static_cast<uint32_t>(k) + (layout.dedup ? kStateQueries : 0);
    nn.n_query = step_a ? na : nb;
    nn.n_db = step_a ? nb : na;
    nn.dim = s.dim;
    nn.meta_index = static_cast<uint32_t>(k);
    RECON_RETURN_IF_ERROR(record_nn(g, k < 2 ? geo : tail_geo, nn));
    RECON_RETURN_IF_ERROR(record_update(g, part, state, lists, step_a ? xy1 : xy2, step_a ? xy2 : xy1, score, notyet,
                                        tables, layout, k, update_grid));
  }

  g.timestamp("merge");
  RECON_RETURN_IF_ERROR(record_scatter(g, notyet, xy1, xy2, score, mark_b, mark_s, seeds_));
  CompactArgs c;
  c.cand_b = mark_b;
  c.cand_s = mark_s;
  c.qpix = mark_b;  // unused in mode 0
  c.blocks = blocks;
  c.count = result_.count;
  c.idx_a = result_.idx_a;
  c.idx_b = result_.idx_b;
  c.score = result_.score;
  c.mode = 0;
  c.n = na;
  c.k = 1;
  c.w_a = s.w_a;
  c.h_a = s.h_a;
  c.w_b = s.w_b;
  c.h_b = s.h_b;
  c.border = options_.border;
  RECON_RETURN_IF_ERROR(record_compact(g, c));
  return record_decorate(g, result_, s, in.pts3d_a, in.pts3d_b, in.conf_a, in.conf_b);
}

Result<uint64_t> FastMatcher::submit(const Tensor& desc_a, const Tensor& desc_b, const MatchMaps& maps, Queue* queue) {
  RECON_RETURN_IF_ERROR(bind_inputs(*graph_, shape_, desc_a, desc_b, maps));
  GraphSubmit how;
  how.queue = queue;
  return graph_->submit(how);
}

Status FastMatcher::wait(uint64_t value) {
  return graph_->wait(value);
}

Result<MatchResult> FastMatcher::run(const Tensor& desc_a, const Tensor& desc_b, const MatchMaps& maps, Queue* queue) {
  RECON_ASSIGN_OR_RETURN(uint64_t value, submit(desc_a, desc_b, maps, queue));
  RECON_RETURN_IF_ERROR(wait(value));
  return result_;
}

}  // namespace recon::gpu
