#include "gpu/models/match/match_kernels.h"

#include <algorithm>
#include <string>
#include <vector>

namespace recon::gpu::match_detail {
namespace {

// Mirrors Push in shaders/match_nn.comp.
struct NnPush {
  uint32_t count_index, grid, n_db, dim, n_chunks;
  uint32_t count_fixed, q_begin, meta_index, n_query;
};
static_assert(sizeof(NnPush) == 36, "mirrors shaders/match_nn.comp");

// Mirrors Push in shaders/match_init.comp.
struct InitPush {
  uint32_t n_seeds, seeds_x, subsample, width_a, n_mark, n_state;
  uint32_t query0, n_tables, tag_a, n_a, entry_a, tag_b, n_b;
};
static_assert(sizeof(InitPush) == 52, "mirrors shaders/match_init.comp");

// Mirrors Push in shaders/match_update.comp.
struct UpdatePush {
  uint32_t step, grid, list_in, list_out, query_out, entry_here, tag_next, entry_next;
};
static_assert(sizeof(UpdatePush) == 32, "mirrors shaders/match_update.comp");

// Mirrors Push in shaders/match_scatter.comp and shaders/match_conf.comp.
struct CountPush {
  uint32_t n;
};
static_assert(sizeof(CountPush) == 4, "mirrors shaders/match_scatter.comp, match_conf.comp");

// Mirrors Push in shaders/match_compact.comp.
struct CompactPush {
  uint32_t n, k, w_a, h_a, w_b, h_b, border, n_blocks;
};
static_assert(sizeof(CompactPush) == 32, "mirrors shaders/match_compact.comp");

// Mirrors Push in shaders/match_coords.comp.
struct CoordsPush {
  uint32_t capacity, w_a, w_b;
};
static_assert(sizeof(CoordsPush) == 12, "mirrors shaders/match_coords.comp");

// Mirrors Push in shaders/match_gather.comp.
struct GatherPush {
  uint32_t capacity, channels;
};
static_assert(sizeof(GatherPush) == 8, "mirrors shaders/match_gather.comp");

// Mirrors Push in shaders/match_topk.comp.
struct TopkPush {
  uint32_t count, q_begin, meta_index, k_fwd;
};
static_assert(sizeof(TopkPush) == 16, "mirrors shaders/match_topk.comp");

// Mirrors Push in shaders/match_mutual.comp.
struct MutualPush {
  uint32_t rows, k, reciprocal, use_conf;
  float threshold;
};
static_assert(sizeof(MutualPush) == 20, "mirrors shaders/match_mutual.comp");

uint32_t u32(int64_t v) {
  return static_cast<uint32_t>(v);
}
uint64_t ceil_div(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

NnGeometry nn_geometry(const Capabilities& caps, int64_t dim, int k, const MatchTuning& tuning) {
  NnGeometry g;
  g.d4 = u32((dim + 3) / 4);
  g.k = static_cast<uint32_t>(k);
  // Query registers: QPT · D4 vec4s. Four queries per invocation at D ≤ 24 (96 floats).
  uint32_t qpt = g.d4 <= 6 ? 4 : g.d4 <= 12 ? 2 : 1;
  qpt = std::min<uint32_t>(qpt, std::max<uint32_t>(1, 8 / g.k));  // K best lists per query too
  if (tuning.queries_per_thread >= 1 && tuning.queries_per_thread <= 8) {
    qpt = static_cast<uint32_t>(tuning.queries_per_thread);
  }
  g.qpt = qpt;
  const uint32_t wg = tuning.workgroup == 64 || tuning.workgroup == 128 ? static_cast<uint32_t>(tuning.workgroup) : 256;
  g.wg = std::min<uint32_t>(wg, caps.max_workgroup_invocations ? caps.max_workgroup_invocations : 256);
  // Shared memory: the chunk (CH · D4 vec4s) plus the lane-merge lists (WG · QPT · K · 8 bytes),
  // within 32 KiB, the least a device offers (lavapipe).
  const uint32_t budget =
      std::min<uint32_t>(caps.max_compute_shared_memory ? caps.max_compute_shared_memory : 32768, 32768);
  const uint32_t lists = g.wg * g.qpt * g.k * 8;
  const uint32_t chunk_bytes = budget > lists + 1024 ? budget - lists : 1024;
  g.ch = std::clamp<uint32_t>(chunk_bytes / (16 * g.d4), 8, 512);
  const bool cpu = caps.device_type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  g.grid = tuning.grid > 0 ? static_cast<uint32_t>(tuning.grid) : cpu ? 16 : 1024;
  // Four pixels per turn (1.79 vs 1.88 ms with two, shifted maps) and the fixed variant measured
  // fastest on an H200 (RECON_MATCH_SWEEP, docs/MATCHING.md); lavapipe keeps the generic shader,
  // one pipeline fewer to build.
  const bool explicit_turn = tuning.pair == 2 || tuning.pair == 4 || tuning.pair == 8;
  if (g.k == 1) g.per_turn = explicit_turn ? static_cast<uint32_t>(tuning.pair) : tuning.pair == 0 && !cpu ? 4 : 1;
  g.fixed = dim == 24 && (g.qpt == 4 || g.qpt == 8) && g.k == 1 && (tuning.fixed == 2 || (tuning.fixed == 0 && !cpu));
  // The tensor-core search: chunks of up to 128 pixels, one per invocation, 528 workgroups
  // (tuning.grid); 16-row query blocks per subgroup (queries_per_thread 1 or 2) and subgroups
  // (workgroup / 32: 64, 128 or 256 invocations) by default 2 × 4 with split products and 1 × 8 with
  // fp16 ones, the fastest of those on an H200 (RECON_MATCH_SWEEP, docs/MATCHING.md): the loop is
  // latency-bound, so more subgroups per SM pay, and unrolled tiles more than the registers they cost.
  if (g.k == 1 && tuning.tensor != 1 && (dim == 8 || dim == 16 || dim == 24 || dim == 32) && caps.subgroup_size == 32 &&
      caps.nv_coopmat_f16_16x16x16() && caps.shader_float16) {
    NnGeometry t = g;
    t.tensor = true;
    t.split = tuning.tensor != MatchTuning::kTensorFp16;
    const bool wg_set = tuning.workgroup == 64 || tuning.workgroup == 128 || tuning.workgroup == 256;
    t.warps = wg_set ? static_cast<uint32_t>(tuning.workgroup) / 32 : t.split ? 4 : 8;
    const bool rows_set = tuning.queries_per_thread == 1 || tuning.queries_per_thread == 2;
    t.rpw = rows_set ? static_cast<uint32_t>(tuning.queries_per_thread) : t.split ? 2 : 1;
    t.wg = 32 * t.warps;
    t.ch = std::min<uint32_t>(t.wg, 128);
    if (tuning.grid == 0) t.grid = 528;
    t.per_turn = 1;
    t.fixed = false;
    // Shared memory (shaders/match_nn_cm.comp): the staged rows, the per-subgroup spill, the probe.
    const uint32_t ks = (t.split ? 2 : 1) * ((static_cast<uint32_t>(dim) + 15) / 16 * 2) + 1;
    const uint32_t bytes = std::max(t.ch, t.query_block()) * ks * 16 + t.warps * t.rpw * 2 * 1024 + 1024;
    if (bytes <= caps.max_compute_shared_memory && t.wg <= caps.max_workgroup_invocations) g = t;
  }
  return g;
}

uint32_t nn_slices(const NnGeometry& geo, uint32_t count, uint32_t n_chunks) {
  if (count == 0 || n_chunks == 0) return 0;
  uint32_t qb = geo.query_block();
  if (!geo.tensor) {  // match_nn.comp narrows its query block to the count
    const uint32_t need = (count + geo.qpt - 1) / geo.qpt;
    uint32_t qt = 1;
    while (qt < need && qt < geo.wg) qt <<= 1;
    qb = qt * geo.qpt;
  }
  const uint32_t nqb = (count + qb - 1) / qb;
  const uint32_t slices = std::clamp<uint32_t>(geo.grid / nqb, 1, n_chunks);
  const uint32_t cps = (n_chunks + slices - 1) / slices;
  return (n_chunks + cps - 1) / cps;
}

int64_t nn_partial_entries(const NnGeometry& geo, int64_t max_count, int64_t n_db) {
  const uint32_t n_chunks = u32(ceil_div(static_cast<uint64_t>(n_db), geo.ch));
  int64_t most = 0;
  for (int64_t c = 1; c <= max_count; ++c) {
    most = std::max<int64_t>(most, int64_t{nn_slices(geo, u32(c), n_chunks)} * c * geo.k);
  }
  return std::max<int64_t>(most, 1);
}

Status record_nn(Graph& g, const NnGeometry& geo, const NnArgs& a) {
  NnPush push{};
  push.n_db = u32(a.n_db);
  push.dim = u32(a.dim);
  push.n_chunks = u32(ceil_div(static_cast<uint64_t>(a.n_db), geo.ch));
  push.grid = geo.grid;
  push.count_index = a.count_index;
  push.count_fixed = a.count_fixed;
  push.q_begin = a.q_begin;
  push.meta_index = a.meta_index;
  push.n_query = u32(a.n_query);
  std::vector<uint32_t> spec = {geo.wg, geo.qpt, geo.d4, geo.ch, geo.k, a.indirect ? 1u : 0u, geo.per_turn};
  const char* shader = geo.fixed ? (geo.qpt == 8 ? "match_nn_d24q8" : "match_nn_d24q4") : "match_nn";
  std::string cm_name;
  if (geo.tensor) {
    spec = {geo.wg, geo.warps, geo.rpw, geo.ch, a.indirect ? 1u : 0u, geo.split ? 1u : 0u};
    cm_name = "match_nn_cm_d" + std::to_string(a.dim);
    shader = cm_name.c_str();
  }
  return g.dispatch(shader, spec,
                    {{a.qmap, Access::kRead},
                     {a.dbmap, Access::kRead},
                     {a.list, Access::kRead},
                     {a.xy, Access::kRead},
                     {a.state, Access::kReadWrite},
                     {a.part, Access::kWrite}},
                    push, {geo.grid, 1, 1});
}

Status record_init(Graph& g, const Arg& xy1, const Arg& xy2, const Arg& notyet, const Arg& lists, const Arg& state,
                   const Arg& mark_b, const Arg& tables, const FastLayout& layout, int64_t seeds_x, int subsample,
                   int64_t w_a) {
  const uint32_t n_a = layout.dedup ? u32(layout.na) : 0, n_b = layout.dedup ? u32(layout.nb) : 0;
  InitPush push{u32(layout.seeds),
                u32(seeds_x),
                static_cast<uint32_t>(subsample),
                u32(w_a),
                u32(mark_b.numel()),
                u32(state.numel()),
                layout.query_list(0),
                layout.dedup ? u32(layout.table_words()) : 0,
                layout.tag(true),
                n_a,
                layout.entry(true),
                layout.tag(false),
                n_b};
  const uint64_t n = std::max<uint64_t>({push.n_seeds, push.n_mark, push.n_state, n_a, n_b});
  return g.dispatch("match_init", {},
                    {{xy1, Access::kWrite},
                     {xy2, Access::kWrite},
                     {notyet, Access::kWrite},
                     {lists, Access::kWrite},
                     {state, Access::kWrite},
                     {mark_b, Access::kWrite},
                     {tables, Access::kWrite}},
                    push, Graph::grid_1d(ceil_div(n, 256)));
}

Status record_update(Graph& g, const Arg& part, const Arg& state, const Arg& lists, const Arg& query_xy,
                     const Arg& target, const Arg& score, const Arg& notyet, const Arg& tables,
                     const FastLayout& layout, int step, uint32_t grid) {
  const bool step_a = step % 2 == 0;  // queries A, updates xy2; the next step queries B
  UpdatePush push{static_cast<uint32_t>(step), grid,
                  layout.seed_list(step),      layout.seed_list(step + 1),
                  layout.query_list(step + 1), layout.entry(step_a),
                  layout.tag(!step_a),         layout.entry(!step_a)};
  const uint32_t spec[] = {layout.dedup ? 1u : 0u};
  return g.dispatch("match_update", spec,
                    {{part, Access::kRead},
                     {state, Access::kReadWrite},
                     {lists, Access::kReadWrite},
                     {query_xy, Access::kRead},
                     {target, Access::kReadWrite},
                     {score, Access::kWrite},
                     {notyet, Access::kReadWrite},
                     {tables, layout.dedup ? Access::kReadWrite : Access::kRead}},
                    push, {grid, 1, 1});
}

Status record_scatter(Graph& g, const Arg& notyet, const Arg& xy1, const Arg& xy2, const Arg& score, const Arg& mark_b,
                      const Arg& mark_s, int64_t seeds) {
  CountPush push{u32(seeds)};
  return g.dispatch("match_scatter", {},
                    {{notyet, Access::kRead},
                     {xy1, Access::kRead},
                     {xy2, Access::kRead},
                     {score, Access::kRead},
                     {mark_b, Access::kWrite},
                     {mark_s, Access::kWrite}},
                    push, Graph::grid_1d(ceil_div(static_cast<uint64_t>(seeds), 256)));
}

Status record_compact(Graph& g, const CompactArgs& a) {
  const uint64_t n_blocks = ceil_div(static_cast<uint64_t>(a.n), kCompactBlock);
  CompactPush push{u32(a.n),
                   u32(a.k),
                   u32(a.w_a),
                   u32(a.h_a),
                   u32(a.w_b),
                   u32(a.h_b),
                   static_cast<uint32_t>(a.border),
                   u32(static_cast<int64_t>(n_blocks))};
  const uint32_t spec[] = {a.mode};
  RECON_RETURN_IF_ERROR(g.dispatch("match_compact_count", spec,
                                   {{a.cand_b, Access::kRead}, {a.qpix, Access::kRead}, {a.blocks, Access::kWrite}},
                                   push, Graph::grid_1d(n_blocks)));
  RECON_RETURN_IF_ERROR(g.dispatch("match_compact_scan", {},
                                   {{a.blocks, Access::kReadWrite}, {a.count, Access::kWrite}}, push, {1, 1, 1}));
  return g.dispatch("match_compact_write", spec,
                    {{a.cand_b, Access::kRead},
                     {a.qpix, Access::kRead},
                     {a.blocks, Access::kRead},
                     {a.cand_s, Access::kRead},
                     {a.idx_a, Access::kWrite},
                     {a.idx_b, Access::kWrite},
                     {a.score, Access::kWrite}},
                    push, Graph::grid_1d(n_blocks));
}

Status record_decorate(Graph& g, const MatchResult& r, const MatchShape& shape, const Arg& pts3d_a, const Arg& pts3d_b,
                       const Arg& conf_a, const Arg& conf_b) {
  const uint64_t cap = static_cast<uint64_t>(r.capacity);
  CoordsPush coords{u32(r.capacity), u32(shape.w_a), u32(shape.w_b)};
  RECON_RETURN_IF_ERROR(g.dispatch("match_coords", {},
                                   {{r.count, Access::kRead},
                                    {r.idx_a, Access::kRead},
                                    {r.idx_b, Access::kRead},
                                    {r.xy_a, Access::kWrite},
                                    {r.xy_b, Access::kWrite}},
                                   coords, Graph::grid_1d(ceil_div(cap, 256))));
  if (shape.pts3d) {
    GatherPush gather{u32(r.capacity), 3};
    RECON_RETURN_IF_ERROR(g.dispatch(
        "match_gather", {},
        {{r.count, Access::kRead}, {r.idx_a, Access::kRead}, {pts3d_a, Access::kRead}, {r.pts3d_a, Access::kWrite}},
        gather, Graph::grid_1d(ceil_div(cap * 3, 256))));
    RECON_RETURN_IF_ERROR(g.dispatch(
        "match_gather", {},
        {{r.count, Access::kRead}, {r.idx_b, Access::kRead}, {pts3d_b, Access::kRead}, {r.pts3d_b, Access::kWrite}},
        gather, Graph::grid_1d(ceil_div(cap * 3, 256))));
  }
  if (shape.conf) {
    CountPush push{u32(r.capacity)};
    RECON_RETURN_IF_ERROR(g.dispatch("match_conf", {},
                                     {{r.count, Access::kRead},
                                      {r.idx_a, Access::kRead},
                                      {r.idx_b, Access::kRead},
                                      {conf_a, Access::kRead},
                                      {conf_b, Access::kRead},
                                      {r.conf_a, Access::kWrite},
                                      {r.conf_b, Access::kWrite},
                                      {r.conf, Access::kWrite}},
                                     push, Graph::grid_1d(ceil_div(cap, 256))));
  }
  return Status::ok();
}

Status record_topk(Graph& g, uint32_t k, uint32_t mode, const Arg& part, const Arg& state, const Arg& top_idx,
                   const Arg& top_score, const Arg& qpix, const Arg& keep, uint32_t count, uint32_t q_begin,
                   uint32_t meta_index, uint32_t k_fwd) {
  TopkPush push{count, q_begin, meta_index, k_fwd};
  const uint32_t spec[] = {k, mode};
  return g.dispatch("match_topk", spec,
                    {{part, Access::kRead},
                     {state, Access::kRead},
                     {top_idx, mode == 0 ? Access::kWrite : Access::kRead},
                     {top_score, mode == 0 ? Access::kWrite : Access::kRead},
                     {qpix, Access::kRead},
                     {keep, mode == 1 ? Access::kWrite : Access::kRead}},
                    push, Graph::grid_1d(ceil_div(count, 64)));
}

Status record_mutual(Graph& g, const Arg& qpix, const Arg& top_idx, const Arg& top_score, const Arg& keep,
                     const Arg& conf_a, const Arg& conf_b, const Arg& cand_b, const Arg& cand_s, int64_t rows,
                     int64_t k, bool reciprocal, bool use_conf, float threshold) {
  MutualPush push{u32(rows), u32(k), reciprocal ? 1u : 0u, use_conf ? 1u : 0u, threshold};
  return g.dispatch("match_mutual", {},
                    {{qpix, Access::kRead},
                     {top_idx, Access::kRead},
                     {top_score, Access::kRead},
                     {keep, Access::kRead},
                     {conf_a, Access::kRead},
                     {conf_b, Access::kRead},
                     {cand_b, Access::kWrite},
                     {cand_s, Access::kWrite}},
                    push, Graph::grid_1d(ceil_div(static_cast<uint64_t>(rows), 64)));
}

Status check_shape(const Runtime& rt, const MatchShape& s) {
  if (s.h_a < 1 || s.w_a < 1 || s.h_b < 1 || s.w_b < 1 || s.dim < 1 || s.dim > kMaxMatchDim) {
    return invalid_argument("match shape " + std::to_string(s.h_a) + "x" + std::to_string(s.w_a) + " / " +
                            std::to_string(s.h_b) + "x" + std::to_string(s.w_b) + " with D = " + std::to_string(s.dim) +
                            ": sizes must be positive and D at most " + std::to_string(kMaxMatchDim));
  }
  const int64_t na = s.h_a * s.w_a, nb = s.h_b * s.w_b;
  if (na >= (int64_t{1} << 31) || nb >= (int64_t{1} << 31)) return invalid_argument("maps of 2^31 pixels or more");
  const uint64_t range = rt.caps().max_storage_buffer_range;
  const uint64_t biggest =
      static_cast<uint64_t>(std::max(na, nb)) * static_cast<uint64_t>(std::max<int64_t>(s.dim, 3)) * 4;
  if (biggest > range) {
    return invalid_argument("a map of " + std::to_string(biggest) +
                            " bytes exceeds the device's storage-buffer range of " + std::to_string(range) +
                            " bytes; match at a lower resolution");
  }
  return Status::ok();
}

InputSlots add_input_slots(Graph& g, const MatchShape& s) {
  const int64_t na = s.h_a * s.w_a, nb = s.h_b * s.w_b;
  InputSlots in;
  in.desc_a = g.add_slot("desc_a", DType::kF32, {na, s.dim});
  in.desc_b = g.add_slot("desc_b", DType::kF32, {nb, s.dim});
  if (s.pts3d) {
    in.pts3d_a = g.add_slot("pts3d_a", DType::kF32, {na, 3});
    in.pts3d_b = g.add_slot("pts3d_b", DType::kF32, {nb, 3});
  }
  if (s.conf) {
    in.conf_a = g.add_slot("conf_a", DType::kF32, {na});
    in.conf_b = g.add_slot("conf_b", DType::kF32, {nb});
  }
  return in;
}

Status bind_inputs(Graph& g, const MatchShape& shape, const Tensor& desc_a, const Tensor& desc_b,
                   const MatchMaps& maps) {
  RECON_ASSIGN_OR_RETURN(MatchShape got, MatchShape::of(desc_a, desc_b, maps));
  if (!(got == shape)) {
    auto str = [](const MatchShape& s) {
      return std::to_string(s.h_a) + "x" + std::to_string(s.w_a) + " / " + std::to_string(s.h_b) + "x" +
             std::to_string(s.w_b) + " D=" + std::to_string(s.dim) + (s.pts3d ? " +pts3d" : "") +
             (s.conf ? " +conf" : "");
    };
    return invalid_argument("inputs are " + str(got) + " but the matcher was built for " + str(shape));
  }
  const int64_t na = shape.h_a * shape.w_a, nb = shape.h_b * shape.w_b;
  auto bind = [&](const char* name, const Tensor& t, const Shape& canonical) -> Status {
    RECON_ASSIGN_OR_RETURN(Tensor v, t.reshape(canonical));
    return g.bind(name, v);
  };
  RECON_RETURN_IF_ERROR(bind("desc_a", desc_a, {na, shape.dim}));
  RECON_RETURN_IF_ERROR(bind("desc_b", desc_b, {nb, shape.dim}));
  if (shape.pts3d) {
    RECON_RETURN_IF_ERROR(bind("pts3d_a", maps.pts3d_a, {na, 3}));
    RECON_RETURN_IF_ERROR(bind("pts3d_b", maps.pts3d_b, {nb, 3}));
  }
  if (shape.conf) {
    RECON_RETURN_IF_ERROR(bind("conf_a", maps.conf_a, {na}));
    RECON_RETURN_IF_ERROR(bind("conf_b", maps.conf_b, {nb}));
  }
  return Status::ok();
}

Result<MatchResult> allocate_result(Runtime& rt, const MatchShape& shape, int64_t capacity) {
  MatchResult r;
  r.capacity = capacity;
  RECON_ASSIGN_OR_RETURN(r.count, Tensor::empty(rt, DType::kI32, {1}));
  RECON_ASSIGN_OR_RETURN(r.idx_a, Tensor::empty(rt, DType::kI32, {capacity}));
  RECON_ASSIGN_OR_RETURN(r.idx_b, Tensor::empty(rt, DType::kI32, {capacity}));
  RECON_ASSIGN_OR_RETURN(r.xy_a, Tensor::empty(rt, DType::kI32, {capacity, 2}));
  RECON_ASSIGN_OR_RETURN(r.xy_b, Tensor::empty(rt, DType::kI32, {capacity, 2}));
  RECON_ASSIGN_OR_RETURN(r.score, Tensor::empty(rt, DType::kF32, {capacity}));
  if (shape.pts3d) {
    RECON_ASSIGN_OR_RETURN(r.pts3d_a, Tensor::empty(rt, DType::kF32, {capacity, 3}));
    RECON_ASSIGN_OR_RETURN(r.pts3d_b, Tensor::empty(rt, DType::kF32, {capacity, 3}));
  }
  if (shape.conf) {
    RECON_ASSIGN_OR_RETURN(r.conf_a, Tensor::empty(rt, DType::kF32, {capacity}));
    RECON_ASSIGN_OR_RETURN(r.conf_b, Tensor::empty(rt, DType::kF32, {capacity}));
    RECON_ASSIGN_OR_RETURN(r.conf, Tensor::empty(rt, DType::kF32, {capacity}));
  }
  RECON_ASSIGN_OR_RETURN(r.state, Tensor::empty(rt, DType::kI32, {kStateWords}));
  return r;
}

}  // namespace recon::gpu::match_detail
