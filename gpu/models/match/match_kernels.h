// Internal to gpu/models/match/: records the matching shaders (shaders/match_*.comp) into a Graph.
// Each function mirrors one shader's bindings and push constants; the matchers compose them.
// Not a public API: shapes are checked by the matchers before these are called.
#pragma once

#include <cstdint>

#include "gpu/capabilities.h"
#include "gpu/graph.h"
#include "gpu/models/match/match.h"

namespace recon::gpu::match_detail {

inline constexpr uint32_t kNone = 0xffffffffu;
// The state buffer: active seeds per step [0, 64), database slices used by step [64, 128),
// distinct query pixels per step [128, 192) (fast matcher with de-duplication).
inline constexpr int64_t kStateWords = 192;
inline constexpr uint32_t kStateQueries = 128;
inline constexpr int64_t kCompactBlock = 1024;  // candidates per block of match_compact.comp

// An operand placeholder (an undefined tensor) for Args that a call does not use.
inline const Arg kNoArg{Tensor()};

// Geometry of match_nn.comp for one (device, dim, k).
struct NnGeometry {
  uint32_t wg = 256, qpt = 4, d4 = 6, ch = 256, k = 1;
  uint32_t grid = 1024;   // workgroups per dispatch
  uint32_t per_turn = 1;  // PER_TURN specialisation constant: database pixels per loop turn
  bool fixed = false;     // use the match_nn_d24q<qpt> variant (D = 24, qpt 4 or 8, K = 1)
  // match_nn_cm.comp instead (tensor cores, K = 1): wg = 32 · warps invocations, ch database pixels
  // per chunk, query blocks of 16 · rpw · warps; split: hi/lo products (else fp16-rounded values).
  bool tensor = false, split = true;
  uint32_t warps = 4, rpw = 2;
  uint32_t query_block() const { return tensor ? 16 * rpw * warps : wg * qpt; }
};
NnGeometry nn_geometry(const Capabilities& caps, int64_t dim, int k, const MatchTuning& tuning);

// The database slices match_nn uses for `count` active queries (its arithmetic, on the host).
uint32_t nn_slices(const NnGeometry& geo, uint32_t count, uint32_t n_chunks);
// Partial-list entries (uvec2) match_nn writes for at most `max_count` queries: the capacity its
// output needs. Exact: the maximum over every count up to max_count.
int64_t nn_partial_entries(const NnGeometry& geo, int64_t max_count, int64_t n_db);

struct NnArgs {
  Arg qmap = kNoArg, dbmap = kNoArg;  // [n_query, dim], [n_db, dim] f32
  Arg list = kNoArg, xy = kNoArg;     // i32; query pixel = indirect ? xy[list[e]] : list[q_begin + e]
  Arg state = kNoArg;                 // i32 [kStateWords]
  Arg part = kNoArg;                  // i32 [2 · nn_partial_entries]
  bool indirect = true;
  int64_t n_query = 0, n_db = 0, dim = 0;
  uint32_t count_index = kNone;  // state[count_index] = query count, or kNone: count_fixed
  uint32_t count_fixed = 0;
  uint32_t q_begin = 0;
  uint32_t meta_index = kNone;  // state[64 + meta_index] = slices used
};
Status record_nn(Graph& g, const NnGeometry& geo, const NnArgs& a);

// Where the fast matcher keeps its lists and per-pixel tables. lists: i32 [4 · seeds] = the active
// seeds of even and odd steps, then the distinct query pixels of even and odd steps. tables (with
// de-duplication): i32 [2 · (na + nb)] = claim tags of A's pixels, their query entries, the same
// for B; without it a placeholder word.
struct FastLayout {
  int64_t seeds = 0, na = 0, nb = 0;
  bool dedup = true;
  uint32_t seed_list(int step) const { return static_cast<uint32_t>((step % 2) * seeds); }
  uint32_t query_list(int step) const { return static_cast<uint32_t>((2 + step % 2) * seeds); }
  uint32_t tag(bool side_a) const { return static_cast<uint32_t>(side_a ? 0 : 2 * na); }
  uint32_t entry(bool side_a) const { return static_cast<uint32_t>(side_a ? na : 2 * na + nb); }
  int64_t list_words() const { return 4 * seeds; }
  int64_t table_words() const { return dedup ? 2 * (na + nb) : 1; }
};

Status record_init(Graph& g, const Arg& xy1, const Arg& xy2, const Arg& notyet, const Arg& lists, const Arg& state,
                   const Arg& mark_b, const Arg& tables, const FastLayout& layout, int64_t seeds_x, int subsample,
                   int64_t w_a);
// Step `step` of the loop (even: a, odd: b); query_xy = the seeds' query pixels of this step,
// target = the pixels it updates.
Status record_update(Graph& g, const Arg& part, const Arg& state, const Arg& lists, const Arg& query_xy,
                     const Arg& target, const Arg& score, const Arg& notyet, const Arg& tables,
                     const FastLayout& layout, int step, uint32_t grid);
Status record_scatter(Graph& g, const Arg& notyet, const Arg& xy1, const Arg& xy2, const Arg& score, const Arg& mark_b,
                      const Arg& mark_s, int64_t seeds);

// Ordered compaction (match_compact.comp). mode 0: candidate e = A pixel e; mode 1: query row e / k
// of qpix. blocks: i32 [ceil(n / kCompactBlock)].
struct CompactArgs {
  Arg cand_b = kNoArg, cand_s = kNoArg, qpix = kNoArg, blocks = kNoArg;
  Arg count = kNoArg, idx_a = kNoArg, idx_b = kNoArg, score = kNoArg;  // outputs
  uint32_t mode = 0;
  int64_t n = 0, k = 1;
  int64_t w_a = 0, h_a = 0, w_b = 0, h_b = 0;
  int border = 0;
};
Status record_compact(Graph& g, const CompactArgs& a);

// Coordinates, gathered pts3d and confidences of the compacted matches in `r`.
Status record_decorate(Graph& g, const MatchResult& r, const MatchShape& shape, const Arg& pts3d_a, const Arg& pts3d_b,
                       const Arg& conf_a, const Arg& conf_b);

Status record_topk(Graph& g, uint32_t k, uint32_t mode, const Arg& part, const Arg& state, const Arg& top_idx,
                   const Arg& top_score, const Arg& qpix, const Arg& keep, uint32_t count, uint32_t q_begin,
                   uint32_t meta_index, uint32_t k_fwd);
Status record_mutual(Graph& g, const Arg& qpix, const Arg& top_idx, const Arg& top_score, const Arg& keep,
                     const Arg& conf_a, const Arg& conf_b, const Arg& cand_b, const Arg& cand_s, int64_t rows,
                     int64_t k, bool reciprocal, bool use_conf, float threshold);

// Checks a shape given to a matcher's create(): positive sizes, dim ≤ kMaxMatchDim, every map
// within one storage-buffer binding.
Status check_shape(const Runtime& rt, const MatchShape& shape);
// Declares the input slots ("desc_a", "desc_b", and the maps the shape has) in canonical shapes:
// descriptors [N, D], pts3d [N, 3], conf [N].
struct InputSlots {
  Arg desc_a = kNoArg, desc_b = kNoArg, pts3d_a = kNoArg, pts3d_b = kNoArg, conf_a = kNoArg, conf_b = kNoArg;
};
InputSlots add_input_slots(Graph& g, const MatchShape& shape);
// Binds run() inputs to those slots after checking they have the matcher's shape.
Status bind_inputs(Graph& g, const MatchShape& shape, const Tensor& desc_a, const Tensor& desc_b,
                   const MatchMaps& maps);

// Allocates the output tensors of a result with this capacity (maps as the shape says).
Result<MatchResult> allocate_result(Runtime& rt, const MatchShape& shape, int64_t capacity);

}  // namespace recon::gpu::match_detail
