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

// Destroying it before get() abandons the request; handles that still arrive are released.
class RECON_CLIENT_API PendingBatch {
 public:
  PendingBatch() = default;

  bool valid() const { return pending_.valid(); }
  bool ready() const { return pending_.ready(); }
  bool wait_for(std::chrono::milliseconds timeout) const { return pending_.wait_for(timeout); }
  // Blocks until the answer (or the request's timeout); returns every pair's Result or throws
  // Error. Callable once.
  BatchResult get();

 private:
  friend class Client;
  explicit PendingBatch(detail::PendingCall pending) : pending_(std::move(pending)) {}
  detail::PendingCall pending_;
};

}  // namespace recon::client
