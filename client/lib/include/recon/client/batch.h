// PendingBatch and BatchResult: the answer to Client::infer_batch — one Result per pair, each
// its own result handle on the daemon (fetched lazily, released by its destructor like any
// Result), in the order of the pairs.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "recon/client/export.h"
#include "recon/client/result.h"
#include "recon/client/types.h"

namespace recon::client {

struct BatchResult {
  std::vector<ImagePair> pairs;  // what the daemon ran (symmetric pairs included)
  std::vector<Result> results;   // results[k] belongs to pairs[k]
};

// Client::infer_batch's answer before it has arrived: pending.h.
using PendingBatch = Pending<BatchResult>;

}  // namespace recon::client
