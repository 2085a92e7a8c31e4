// Pending<T>: the answer to an asynchronous Client call before it has arrived, like std::future —
// PendingResult (infer, match), PendingBatch (infer_batch), PendingRetrieval (encode_retrieval).
// get() waits for the answer (or the request's timeout) and turns it into a T, or throws Error;
// it is callable once. Destroying a Pending before get() abandons the request: a result handle
// that still arrives is released at once. It keeps its Client's connection open. One thread at a
// time.
#pragma once

#include <chrono>
#include <memory>
#include <utility>

#include "recon/client/export.h"

namespace recon::client {

class Client;
class Result;
struct BatchResult;
struct RetrievalResult;

namespace detail {
class Call;
class Core;

// The waiting part every Pending<T> shares: a request in flight and the client core its answer
// needs. Destroying (or assigning over) it before take_over() abandons the request.
class RECON_CLIENT_API PendingCall {
 public:
  PendingCall() = default;
  PendingCall(std::shared_ptr<Core> core, std::shared_ptr<Call> call);
  PendingCall(PendingCall&&) noexcept = default;
  PendingCall& operator=(PendingCall&&) noexcept;
  ~PendingCall();

  bool valid() const { return call_ != nullptr; }
  bool ready() const;
  bool wait_for(std::chrono::milliseconds timeout) const;
  // Hands the call and its core to get(); throws Error (kInvalidArgument) naming `owner` when
  // there is none (default-constructed, or get() called before).
  std::pair<std::shared_ptr<Call>, std::shared_ptr<Core>> take_over(const char* owner);

 private:
  void abandon() noexcept;
  std::shared_ptr<Core> core_;
  std::shared_ptr<Call> call_;
};

// How each verb's answer becomes what its Pending returns (they wrap every result handle the
// answer names at once, so that a failure releases all of them).
struct RECON_CLIENT_API Decode {
  static Result infer(std::shared_ptr<Call> call, std::shared_ptr<Core> core);
  static Result infer_pair(std::shared_ptr<Call> call, std::shared_ptr<Core> core);
  static Result match(std::shared_ptr<Call> call, std::shared_ptr<Core> core);
  static BatchResult batch(std::shared_ptr<Call> call, std::shared_ptr<Core> core);
  static RetrievalResult retrieval(std::shared_ptr<Call> call, std::shared_ptr<Core> core);
};
}  // namespace detail

template <class T>
class Pending {
 public:
  Pending() = default;

  // False once get() has been called (or for a default-constructed object).
  bool valid() const { return pending_.valid(); }
  // True when get() will not block.
  bool ready() const { return pending_.ready(); }
  // Waits up to `timeout`; true when ready.
  bool wait_for(std::chrono::milliseconds timeout) const { return pending_.wait_for(timeout); }
  // Blocks until the answer (or the request's timeout), then returns it or throws Error.
  T get() {
    auto [call, core] = pending_.take_over(name_);
    return decode_(std::move(call), std::move(core));
  }

 private:
  friend class Client;
  using DecodeFn = T (*)(std::shared_ptr<detail::Call>, std::shared_ptr<detail::Core>);
  Pending(detail::PendingCall pending, DecodeFn decode, const char* name)
      : pending_(std::move(pending)), decode_(decode), name_(name) {}

  detail::PendingCall pending_;
  DecodeFn decode_ = nullptr;
  const char* name_ = "Pending";
};

}  // namespace recon::client
