// FastMatcherCache and kept_matches: see fast_matcher_cache.h.
#include "gpu/models/match/fast_matcher_cache.h"

#include <algorithm>

namespace recon::gpu {

Result<FastMatcher*> FastMatcherCache::get(const MatchShape& shape, const FastMatchOptions& options) {
  auto it = std::find_if(matchers_.begin(), matchers_.end(), [&](const auto& m) {
    return m->shape() == shape && m->options().subsample == options.subsample &&
           m->options().max_iter == options.max_iter && m->options().border == options.border &&
           m->options().tuning == options.tuning;
  });
  if (it == matchers_.end()) {
    RECON_ASSIGN_OR_RETURN(auto made, FastMatcher::create(rt_, shape, options));
    if (matchers_.size() == capacity_) matchers_.erase(matchers_.begin());
    matchers_.push_back(std::move(made));
  } else {
    std::rotate(it, it + 1, matchers_.end());
  }
  return matchers_.back().get();
}

std::vector<size_t> kept_matches(const HostMatches& host, float min_confidence, uint32_t max_matches) {
  const bool conf = !host.conf.empty();
  std::vector<size_t> rows;
  for (size_t i = 0; i < host.size(); ++i) {
    if (min_confidence > 0 && (host.conf_a[i] < min_confidence || host.conf_b[i] < min_confidence)) continue;
    rows.push_back(i);
  }
  if (rows.size() > max_matches) {
    const std::vector<float>& key = conf ? host.conf : host.score;
    std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) { return key[a] > key[b]; });
    rows.resize(max_matches);
    std::sort(rows.begin(), rows.end());
  }
  return rows;
}

}  // namespace recon::gpu
