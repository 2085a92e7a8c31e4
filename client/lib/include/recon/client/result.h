// Result: the answer to an inference (or a match), a handle to tensors that stay in the daemon's device memory
// until fetched ("lazy retrieval"); PendingResult: a Result that has not arrived yet (pending.h);
// TensorView: a fetched tensor, viewed in place in the client's shared-memory output region (no copy).
//
// Lifetime (RAII): destroying a Result releases its handle on the daemon (a fire-and-forget
// Release; the daemon would also free it at the handle's TTL or when the session ends) and frees
// the output space its fetched tensors use, so TensorViews are valid exactly as long as their
// Result. Destroying a PendingResult before get() abandons it: a handle that still arrives is
// released at once. A Result (or PendingResult) keeps its Client's connection open.
//
// Thread safety: a Result may be used from several threads at once (fetches are serialised);
// a PendingResult, like std::future, by one thread at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "recon/client/error.h"
#include "recon/client/export.h"
#include "recon/client/pending.h"
#include "recon/client/types.h"

namespace recon::client {

namespace detail {
class ResultState;
}  // namespace detail

// A fetched tensor in shared memory. Valid while its Result lives.
class RECON_CLIENT_API TensorView {
 public:
  TensorView() = default;
  TensorView(const TensorInfo* info, std::span<const std::byte> bytes) : info_(info), bytes_(bytes) {}

  const std::string& name() const { return info_->name; }
  std::span<const uint64_t> shape() const { return info_->shape; }
  DType dtype() const { return info_->dtype; }
  uint64_t elements() const { return info_->elements(); }
  std::span<const std::byte> bytes() const { return bytes_; }

  // The elements typed: float for F32, uint16_t for F16/BF16 (raw bits), uint8_t for U8,
  // int32_t/uint32_t/int64_t for I32/U32/I64. Throws Error(kInvalidArgument) on a mismatch.
  template <typename T>
  std::span<const T> as() const {
    check_type(sizeof(T), type_tag<T>());
    return {reinterpret_cast<const T*>(bytes_.data()), bytes_.size() / sizeof(T)};
  }
  // Converts F32/F16/BF16 elements to a new vector of float (the only copy in this API).
  std::vector<float> to_float() const;

 private:
  template <typename T>
  static constexpr int type_tag() {
    if constexpr (std::is_same_v<T, float>) return 0;
    if constexpr (std::is_same_v<T, uint16_t>) return 1;
    if constexpr (std::is_same_v<T, uint8_t>) return 2;
    if constexpr (std::is_same_v<T, int32_t>) return 3;
    if constexpr (std::is_same_v<T, uint32_t>) return 4;
    if constexpr (std::is_same_v<T, int64_t>) return 5;
    return -1;
  }
  void check_type(size_t element_size, int tag) const;

  const TensorInfo* info_ = nullptr;
  std::span<const std::byte> bytes_;
};

class RECON_CLIENT_API Result {
 public:
  Result();
  Result(Result&&) noexcept;
  Result& operator=(Result&&) noexcept;
  ~Result();

  bool valid() const { return state_ != nullptr; }
  // Model that produced it, e.g. "mast3r".
  const std::string& model() const;
  // Every tensor the handle holds (names, shapes, dtypes, sizes): known without fetching.
  const std::vector<TensorInfo>& tensors() const;
  // nullptr when the handle has no tensor of that name.
  const TensorInfo* find(std::string_view name) const;
  const Timings& timings() const;
  // Time from sending the request to receiving the answer, as this client saw it.
  std::chrono::nanoseconds round_trip() const;
  // How long the daemon keeps the handle unless released (0 = no TTL).
  std::chrono::milliseconds ttl() const;
  // The handle id in hex (for logs; it is a capability, so do not publish it).
  std::string handle_id() const;
  // For a Client::match result: the number of matches (rows of "matches_1"); 0 otherwise.
  uint64_t match_count() const;

  // The tensor, fetched into shared memory on first use (one round trip), then a view of it.
  // Throws Error(kNotFound) for an unknown name or a released/expired handle.
  TensorView tensor(std::string_view name);
  // Fetches the named tensors not fetched yet in ONE round trip (no names = every tensor).
  // With release_after, the daemon frees the handle in the same request.
  void fetch(std::span<const std::string> names = {}, bool release_after = false);
  void fetch(std::initializer_list<std::string> names, bool release_after = false);
  // Bytes fetched so far and the daemon's copy time for them.
  uint64_t fetched_bytes() const;
  std::chrono::nanoseconds fetch_copy_time() const;
  // Frees the handle on the daemon now (fire-and-forget). Fetched views stay valid; fetching
  // anything else afterwards fails with kNotFound. Idempotent.
  void release();
  bool released() const;

 private:
  friend class Client;  // match() names the handle
  friend class Job;     // a job's final event carries its handle
  friend struct detail::Decode;
  explicit Result(std::unique_ptr<detail::ResultState> state);
  std::unique_ptr<detail::ResultState> state_;
};

// A Result that has not arrived yet (Client::infer, Client::match): pending.h.
using PendingResult = Pending<Result>;

}  // namespace recon::client
