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

class RECON_CLIENT_API PendingBatch {
 public:
  PendingBatch() = default;
  PendingBatch(PendingBatch&&) noexcept = default;
  PendingBatch& operator=(PendingBatch&&) noexcept;
  ~PendingBatch();  // before get(): abandons the batch; handles that still arrive are released

  bool valid() const { return call_ != nullptr; }
  bool ready() const;
  bool wait_for(std::chrono::milliseconds timeout) const;
  // Blocks until the answer (or the request's timeout); returns every pair's Result or throws
  // Error. Callable once.
  BatchResult get();

 private:
  friend class Client;
  PendingBatch(std::shared_ptr<detail::Core> core, std::shared_ptr<detail::Call> call);
  void abandon() noexcept;
  std::shared_ptr<detail::Core> core_;
  std::shared_ptr<detail::Call> call_;
};

}  // namespace recon::client
