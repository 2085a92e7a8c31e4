// FastMatcherCache: recorded fast matchers kept for reuse, one per shape and options, the most
// recently used kept when full (each holds a few MiB of scratch). Its users are the daemon's
// MatchInstance and the Python Engine; both match many pairs of a few shapes.
// Not thread-safe (nor are the matchers it hands out): one user thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/models/match/match.h"

namespace recon::gpu {

class FastMatcherCache {
 public:
  explicit FastMatcherCache(Runtime& rt, size_t capacity = 8) : rt_(rt), capacity_(capacity) {}

  // A matcher for this shape and options: kept, or built now (and the least recently used dropped).
  Result<FastMatcher*> get(const MatchShape& shape, const FastMatchOptions& options);
  size_t size() const { return matchers_.size(); }  // matchers kept

 private:
  Runtime& rt_;
  const size_t capacity_;
  std::vector<std::unique_ptr<FastMatcher>> matchers_;  // most recently used last
};

// Rows of `host` to keep, in the matcher's order (by the view-1 pixel): both pixels' descriptor
// confidence ≥ min_confidence (when > 0; needs the confidence maps), then, beyond max_matches, the
// most confident ones (by match confidence, or by descriptor similarity without confidence maps;
// ties to the earlier row).
std::vector<size_t> kept_matches(const HostMatches& host, float min_confidence, uint32_t max_matches);

}  // namespace recon::gpu
