// The outputs of one MASt3R pair as the ResultStore keeps them: views into the engine result's
// device tensors (no copy), named as DESIGN.md §4 lists them, optionally only some of them.
#pragma once

#include <string>
#include <vector>

#include "daemon/serving/result_store.h"
#include "gpu/models/mast3r/mast3r_engine.h"

namespace recon::daemon {

// Pair `index` of `out` (tensors [B, H, W, ...], or [H, W, ...] for a single pair when index is
// 0), keeping the names in `keep` (empty = all eight).
Result<std::vector<StoredTensor>> pair_tensors(const gpu::Mast3rOutputs& out, size_t index,
                                               const std::vector<std::string>& keep);

}  // namespace recon::daemon
