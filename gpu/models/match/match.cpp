// What both matchers share: input validation (MatchShape::of), the seed grid, the host copy of a
// result and the one-shot functions. The graphs themselves are in fast_matcher.cpp and
// exhaustive_matcher.cpp.
#include "gpu/models/match/match.h"

#include <string>

#include "gpu/models/match/match_kernels.h"

namespace recon::gpu {
namespace {

struct MapSize {
  int64_t h = 0, w = 0, c = 0;
};

// [H, W, C] or [1, H, W, C] (channels = 0: [H, W] or [1, H, W]), f32.
Result<MapSize> map_size(const Tensor& t, const char* name, bool channels) {
  if (!t.defined()) return invalid_argument(std::string(name) + " is undefined");
  if (t.dtype() != DType::kF32) {
    return invalid_argument(std::string(name) + " must be f32, got " + dtype_name(t.dtype()));
  }
  Shape s = t.shape();
  const size_t rank = channels ? 3 : 2;
  if (s.size() == rank + 1 && s[0] == 1) s.erase(s.begin());
  if (s.size() != rank) {
    return invalid_argument(std::string(name) + " must be " +
                            (channels ? "[H, W, C] or [1, H, W, C]" : "[H, W] or [1, H, W]") + ", got " +
                            shape_string(t.shape()));
  }
  for (int64_t d : s) {
    if (d < 1) return invalid_argument(std::string(name) + " has an empty axis: " + shape_string(t.shape()));
  }
  if (s[0] * s[1] >= (int64_t{1} << 31)) return invalid_argument(std::string(name) + " has 2^31 pixels or more");
  return MapSize{s[0], s[1], channels ? s[2] : 0};
}

}  // namespace

Result<MatchShape> MatchShape::of(const Tensor& desc_a, const Tensor& desc_b, const MatchMaps& maps) {
  RECON_ASSIGN_OR_RETURN(MapSize a, map_size(desc_a, "desc_a", true));
  RECON_ASSIGN_OR_RETURN(MapSize b, map_size(desc_b, "desc_b", true));
  if (a.c != b.c) {
    return invalid_argument("descriptor sizes differ: desc_a " + shape_string(desc_a.shape()) + ", desc_b " +
                            shape_string(desc_b.shape()));
  }
  if (a.c > kMaxMatchDim) {
    return invalid_argument("descriptors of " + std::to_string(a.c) + " channels; at most " +
                            std::to_string(kMaxMatchDim));
  }
  MatchShape s{a.h, a.w, b.h, b.w, a.c, false, false};
  if (maps.pts3d_a.defined() != maps.pts3d_b.defined()) {
    return invalid_argument("give both pts3d maps or neither");
  }
  if (maps.conf_a.defined() != maps.conf_b.defined()) return invalid_argument("give both conf maps or neither");
  if (maps.pts3d_a.defined()) {
    RECON_ASSIGN_OR_RETURN(MapSize pa, map_size(maps.pts3d_a, "pts3d_a", true));
    RECON_ASSIGN_OR_RETURN(MapSize pb, map_size(maps.pts3d_b, "pts3d_b", true));
    if (pa.h != a.h || pa.w != a.w || pa.c != 3 || pb.h != b.h || pb.w != b.w || pb.c != 3) {
      return invalid_argument("pts3d maps " + shape_string(maps.pts3d_a.shape()) + ", " +
                              shape_string(maps.pts3d_b.shape()) + " must be [H, W, 3] of their descriptor maps");
    }
    s.pts3d = true;
  }
  if (maps.conf_a.defined()) {
    RECON_ASSIGN_OR_RETURN(MapSize ca, map_size(maps.conf_a, "conf_a", false));
    RECON_ASSIGN_OR_RETURN(MapSize cb, map_size(maps.conf_b, "conf_b", false));
    if (ca.h != a.h || ca.w != a.w || cb.h != b.h || cb.w != b.w) {
      return invalid_argument("conf maps " + shape_string(maps.conf_a.shape()) + ", " +
                              shape_string(maps.conf_b.shape()) + " must be [H, W] of their descriptor maps");
    }
    s.conf = true;
  }
  return s;
}

std::vector<int32_t> match_seed_grid(int64_t h, int64_t w, int subsample) {
  std::vector<int32_t> seeds;
  if (subsample < 1) return seeds;
  for (int64_t y = subsample / 2; y < h; y += subsample) {
    for (int64_t x = subsample / 2; x < w; x += subsample) seeds.push_back(static_cast<int32_t>(y * w + x));
  }
  return seeds;
}

Result<HostMatches> MatchResult::to_host(Runtime& rt) const {
  HostMatches h;
  int32_t n = 0;
  RECON_RETURN_IF_ERROR(count.download(rt, &n, sizeof(n)));
  if (n < 0 || n > capacity) {
    return internal_error("match count " + std::to_string(n) + " outside 0.." + std::to_string(capacity));
  }
  auto rows = [&](const Tensor& t, auto& out, int64_t per_row) -> Status {
    if (!t.defined() || n == 0) return Status::ok();
    out.resize(static_cast<size_t>(n) * per_row);
    RECON_ASSIGN_OR_RETURN(Tensor v, t.slice_rows(0, n));
    return v.download(rt, out.data(), out.size() * sizeof(out[0]));
  };
  RECON_RETURN_IF_ERROR(rows(idx_a, h.idx_a, 1));
  RECON_RETURN_IF_ERROR(rows(idx_b, h.idx_b, 1));
  RECON_RETURN_IF_ERROR(rows(xy_a, h.xy_a, 2));
  RECON_RETURN_IF_ERROR(rows(xy_b, h.xy_b, 2));
  RECON_RETURN_IF_ERROR(rows(score, h.score, 1));
  RECON_RETURN_IF_ERROR(rows(pts3d_a, h.pts3d_a, 3));
  RECON_RETURN_IF_ERROR(rows(pts3d_b, h.pts3d_b, 3));
  RECON_RETURN_IF_ERROR(rows(conf_a, h.conf_a, 1));
  RECON_RETURN_IF_ERROR(rows(conf_b, h.conf_b, 1));
  RECON_RETURN_IF_ERROR(rows(conf, h.conf, 1));
  if (steps > 0) {
    h.active_per_step.resize(static_cast<size_t>(steps));
    RECON_ASSIGN_OR_RETURN(Tensor v, state.slice_rows(0, steps));
    RECON_RETURN_IF_ERROR(v.download(rt, h.active_per_step.data(), h.active_per_step.size() * sizeof(int32_t)));
    h.queries_per_step.assign(h.active_per_step.begin(), h.active_per_step.end() - 1);
    if (dedup) {
      RECON_ASSIGN_OR_RETURN(Tensor q,
                             state.slice_rows(match_detail::kStateQueries, match_detail::kStateQueries + steps - 1));
      RECON_RETURN_IF_ERROR(q.download(rt, h.queries_per_step.data(), h.queries_per_step.size() * sizeof(int32_t)));
    }
  }
  return h;
}

Result<MatchResult> match_fast_reciprocal(Runtime& rt, const Tensor& desc_a, const Tensor& desc_b,
                                          const FastMatchOptions& options, const MatchMaps& maps) {
  RECON_ASSIGN_OR_RETURN(MatchShape shape, MatchShape::of(desc_a, desc_b, maps));
  RECON_ASSIGN_OR_RETURN(auto matcher, FastMatcher::create(rt, shape, options));
  return matcher->run(desc_a, desc_b, maps);
}

Result<MatchResult> match_exhaustive(Runtime& rt, const Tensor& desc_a, const Tensor& desc_b,
                                     const ExhaustiveMatchOptions& options, const MatchMaps& maps) {
  RECON_ASSIGN_OR_RETURN(MatchShape shape, MatchShape::of(desc_a, desc_b, maps));
  RECON_ASSIGN_OR_RETURN(auto matcher, ExhaustiveMatcher::create(rt, shape, options));
  return matcher->run(desc_a, desc_b, maps);
}

}  // namespace recon::gpu
