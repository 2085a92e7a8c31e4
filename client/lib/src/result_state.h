// ResultState: what a Result holds: the handle and its tensor list, the output blocks its fetches
// landed in, and the connection. Its destructor is the RAII release: a fire-and-forget Release
// unless the handle was released already, then the blocks go back to the arena.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core.h"
#include "recon/client/types.h"

namespace recon::client::detail {

class ResultState {
 public:
  // From a verified answer's handle. Throws Error(kInternal) for an inconsistent one, whose
  // handle it releases itself (through the destructor of the state it was filling).
  static std::unique_ptr<ResultState> from_wire(std::shared_ptr<Core> core, const wire::ResultHandle* handle,
                                                std::chrono::nanoseconds round_trip);
  ~ResultState();

  const std::string& model() const { return model_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const Timings& timings() const { return timings_; }
  std::chrono::nanoseconds round_trip() const { return round_trip_; }
  std::chrono::milliseconds ttl() const { return ttl_; }
  const Id& handle() const { return handle_; }
  int index_of(std::string_view name) const;  // -1 when absent

  // The bytes of tensor `index`, fetching it (and, in the same request, `also`) when needed.
  std::span<const std::byte> bytes(int index);
  void fetch(const std::vector<int>& indices, bool release_after);
  void release() noexcept;
  bool released() const;
  uint64_t fetched_bytes() const;
  std::chrono::nanoseconds copy_time() const;

 private:
  ResultState() = default;
  void fetch_locked(const std::vector<int>& indices, bool release_after);

  std::shared_ptr<Core> core_;
  Id handle_;
  std::string model_;
  std::vector<TensorInfo> tensors_;
  Timings timings_;
  std::chrono::nanoseconds round_trip_{0};
  std::chrono::milliseconds ttl_{0};

  mutable std::mutex mutex_;  // guards everything below
  bool released_ = false;
  std::vector<std::optional<std::span<const std::byte>>> fetched_;  // per tensor
  std::vector<OutputArena::Block> blocks_;
  uint64_t fetched_bytes_ = 0;
  std::chrono::nanoseconds copy_time_{0};
};

}  // namespace recon::client::detail
