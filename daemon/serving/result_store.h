// ResultStore: the result handles of every session — inference outputs kept in device memory
// until the client fetches and releases them (lazy retrieval, DESIGN.md §1.3).
//
// Rules it enforces:
//  * a handle id is 128-bit random and bound to its session: another session's id reads exactly
//    like one that never existed (NOT_FOUND);
//  * per-session quotas on live handles (counting inferences admitted but not finished, through
//    HandleReservation) and on bytes, plus a global byte cap (RESOURCE_EXHAUSTED);
//  * eviction: a handle expires at its TTL (expire()), and every handle of a session is freed
//    when the session ends (close_client); an inference that finishes after its session ended
//    is dropped on insert.
// Thread safety: every member may be called from any thread; mutex_ guards all state. Device
// memory is freed when the last shared_ptr to a StoredResult goes (a fetch in progress keeps
// what it reads alive after a concurrent release).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/ipc/id128.h"
#include "daemon/ipc/shm_registry.h"
#include "gpu/status.h"
#include "gpu/tensor.h"

namespace recon::daemon {

using SteadyClock = std::chrono::steady_clock;

struct StoredTensor {
  std::string name;    // "pts3d_1", "conf_2", ...
  gpu::Tensor tensor;  // undefined when bytes == 0 (an empty match list: device memory has no 0-byte buffers)
  gpu::DType dtype = gpu::DType::kF32;
  std::vector<uint64_t> shape;
  uint64_t bytes = 0;
};

// Nanoseconds per stage, as wire::Timings reports them.
struct RequestTimings {
  uint64_t queue_ns = 0;
  uint64_t input_ns = 0;
  uint64_t compute_ns = 0;
  uint64_t output_ns = 0;
  uint64_t total_ns = 0;
  uint32_t batch_size = 0;
};

struct StoredResult {
  Id128 id;
  ClientId client = 0;
  size_t device = 0;
  std::string model;
  std::vector<StoredTensor> tensors;
  RequestTimings timings;
  uint32_t ttl_ms = 0;
  uint64_t bytes = 0;  // sum of the tensors' bytes

  const StoredTensor* find(std::string_view name) const;
};

struct ResultLimits {
  uint32_t max_handles_per_client = 256;
  uint64_t max_bytes_per_client = uint64_t{4} << 30;
  uint64_t max_total_bytes = uint64_t{16} << 30;
};

struct ResultUsage {
  uint32_t handles = 0;
  uint32_t reserved = 0;  // admitted inferences that will produce a handle
  uint64_t bytes = 0;
};

class ResultStore;

// A slot for one future handle, taken at admission; released on destruction unless consumed by
// ResultStore::insert. Move-only; must not outlive its store.
class HandleReservation {
 public:
  HandleReservation() = default;
  HandleReservation(HandleReservation&& other) noexcept
      : store_(std::exchange(other.store_, nullptr)), client_(other.client_) {}
  HandleReservation& operator=(HandleReservation&& other) noexcept;
  HandleReservation(const HandleReservation&) = delete;
  HandleReservation& operator=(const HandleReservation&) = delete;
  ~HandleReservation() { reset(); }

  explicit operator bool() const { return store_ != nullptr; }
  ClientId client() const { return client_; }
  void reset();

 private:
  friend class ResultStore;
  HandleReservation(ResultStore* store, ClientId client) : store_(store), client_(client) {}
  ResultStore* store_ = nullptr;
  ClientId client_ = 0;
};

class ResultStore {
 public:
  explicit ResultStore(ResultLimits limits) : limits_(limits) {}
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  // A session starts / ends. close_client frees its handles and returns how many.
  void open_client(ClientId client);
  size_t close_client(ClientId client);
  bool client_open(ClientId client) const;

  // Admission of an inference: RESOURCE_EXHAUSTED when the session's handles (live + reserved)
  // or bytes are at their quota, NOT_FOUND when the session is closed.
  Result<HandleReservation> reserve(ClientId client);

  // Stores a finished result under a fresh id (assigned here) with the given TTL, consuming the
  // reservation. NOT_FOUND when the session ended meanwhile; RESOURCE_EXHAUSTED when the bytes
  // would exceed a quota. On failure the tensors are freed with `result`.
  Result<std::shared_ptr<const StoredResult>> insert(HandleReservation reservation, StoredResult result,
                                                     SteadyClock::time_point now = SteadyClock::now());

  // The session's handle, or NOT_FOUND (unknown, foreign, released or expired).
  Result<std::shared_ptr<const StoredResult>> find(ClientId client, const Id128& id) const;
  // False when the session has no such handle.
  bool release(ClientId client, const Id128& id);

  // Frees handles whose TTL passed; returns how many.
  size_t expire(SteadyClock::time_point now = SteadyClock::now());

  ResultUsage usage(ClientId client) const;
  ResultUsage total() const;
  // Bytes of the results held on `device`.
  uint64_t bytes_on(size_t device) const;
  uint64_t expired_count() const;
  const ResultLimits& limits() const { return limits_; }

 private:
  friend class HandleReservation;
  struct Entry {
    std::shared_ptr<const StoredResult> result;
    std::multimap<SteadyClock::time_point, Id128>::iterator expiry;
  };
  struct Client {
    ResultUsage usage;
  };
  void unreserve(ClientId client);
  // Removes `it` from every index; returns the result so that it is freed outside the lock.
  std::shared_ptr<const StoredResult> erase_locked(std::unordered_map<Id128, Entry, Id128Hash>::iterator it);

  const ResultLimits limits_;
  mutable std::mutex mutex_;
  std::unordered_map<Id128, Entry, Id128Hash> entries_;
  std::multimap<SteadyClock::time_point, Id128> expiries_;
  std::unordered_map<ClientId, Client> clients_;  // open sessions
  ResultUsage total_;
  std::map<size_t, uint64_t> device_bytes_;  // of total_.bytes, per device
  uint64_t expired_ = 0;
};

}  // namespace recon::daemon
