// ResultStore: see result_store.h.
#include "daemon/serving/result_store.h"

#include <utility>

namespace recon::daemon {

const StoredTensor* StoredResult::find(std::string_view name) const {
  for (const StoredTensor& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

HandleReservation& HandleReservation::operator=(HandleReservation&& other) noexcept {
  if (this != &other) {
    reset();
    store_ = std::exchange(other.store_, nullptr);
    client_ = other.client_;
  }
  return *this;
}

void HandleReservation::reset() {
  if (store_ != nullptr) std::exchange(store_, nullptr)->unreserve(client_);
}

void ResultStore::open_client(ClientId client) {
  std::lock_guard lock(mutex_);
  clients_.try_emplace(client);
}

size_t ResultStore::close_client(ClientId client) {
  std::vector<std::shared_ptr<const StoredResult>> freed;  // destroyed after the lock
  {
    std::lock_guard lock(mutex_);
    if (clients_.erase(client) == 0) return 0;
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.result->client == client) {
        auto next = std::next(it);
        freed.push_back(erase_locked(it));
        it = next;
      } else {
        ++it;
      }
    }
  }
  return freed.size();
}

bool ResultStore::client_open(ClientId client) const {
  std::lock_guard lock(mutex_);
  return clients_.count(client) != 0;
}

Result<HandleReservation> ResultStore::reserve(ClientId client) {
  std::lock_guard lock(mutex_);
  auto it = clients_.find(client);
  if (it == clients_.end()) return not_found("session closed");
  ResultUsage& usage = it->second.usage;
  if (usage.handles + usage.reserved >= limits_.max_handles_per_client) {
    return resource_exhausted("the session holds " + std::to_string(usage.handles) + " result handles and " +
                              std::to_string(usage.reserved) + " running inferences (limit " +
                              std::to_string(limits_.max_handles_per_client) + "); release some");
  }
  if (usage.bytes >= limits_.max_bytes_per_client) {
    return resource_exhausted("the session's result handles hold " + std::to_string(usage.bytes) +
                              " bytes of device memory (limit " + std::to_string(limits_.max_bytes_per_client) +
                              "); release some");
  }
  ++usage.reserved;
  return HandleReservation(this, client);
}

void ResultStore::unreserve(ClientId client) {
  std::lock_guard lock(mutex_);
  auto it = clients_.find(client);
  if (it != clients_.end() && it->second.usage.reserved > 0) --it->second.usage.reserved;
}

Result<std::shared_ptr<const StoredResult>> ResultStore::insert(HandleReservation reservation, StoredResult result,
                                                                SteadyClock::time_point now) {
  if (!reservation) return internal_error("inserting a result without a reservation");
  RECON_ASSIGN_OR_RETURN(result.id, Id128::random());
  result.client = reservation.client();
  result.bytes = 0;
  for (const StoredTensor& t : result.tensors) result.bytes += t.bytes;
  auto shared = std::make_shared<const StoredResult>(std::move(result));

  std::lock_guard lock(mutex_);
  auto client = clients_.find(shared->client);
  if (client == clients_.end()) return not_found("the session ended while its inference ran");
  ResultUsage& usage = client->second.usage;
  if (usage.bytes + shared->bytes > limits_.max_bytes_per_client) {
    return resource_exhausted("the result (" + std::to_string(shared->bytes) + " bytes) would exceed the session's " +
                              std::to_string(limits_.max_bytes_per_client) + "-byte quota for results");
  }
  if (total_.bytes + shared->bytes > limits_.max_total_bytes) {
    return resource_exhausted("result memory of all sessions is at its cap (" +
                              std::to_string(limits_.max_total_bytes) + " bytes)");
  }
  // The reservation becomes the handle.
  reservation.store_ = nullptr;
  if (usage.reserved > 0) --usage.reserved;
  ++usage.handles;
  usage.bytes += shared->bytes;
  ++total_.handles;
  total_.bytes += shared->bytes;
  device_bytes_[shared->device] += shared->bytes;
  const auto expiry = expiries_.emplace(now + std::chrono::milliseconds(shared->ttl_ms), shared->id);
  entries_.emplace(shared->id, Entry{shared, expiry});
  return shared;
}

Result<std::shared_ptr<const StoredResult>> ResultStore::find(ClientId client, const Id128& id) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.result->client != client) {
    return not_found("no result handle " + id.to_string() + " in this session (released, expired or never made)");
  }
  return it->second.result;
}

bool ResultStore::release(ClientId client, const Id128& id) {
  std::shared_ptr<const StoredResult> freed;
  std::lock_guard lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.result->client != client) return false;
  freed = erase_locked(it);
  return true;
  // `freed` is destroyed after the lock_guard (reverse declaration order): see erase_locked.
}

std::shared_ptr<const StoredResult> ResultStore::erase_locked(
    std::unordered_map<Id128, Entry, Id128Hash>::iterator it) {
  std::shared_ptr<const StoredResult> result = std::move(it->second.result);
  expiries_.erase(it->second.expiry);
  entries_.erase(it);
  auto client = clients_.find(result->client);
  if (client != clients_.end()) {
    --client->second.usage.handles;
    client->second.usage.bytes -= result->bytes;
  }
  --total_.handles;
  total_.bytes -= result->bytes;
  device_bytes_[result->device] -= result->bytes;
  return result;
}

size_t ResultStore::expire(SteadyClock::time_point now) {
  std::vector<std::shared_ptr<const StoredResult>> freed;
  {
    std::lock_guard lock(mutex_);
    while (!expiries_.empty() && expiries_.begin()->first <= now) {
      auto it = entries_.find(expiries_.begin()->second);
      freed.push_back(erase_locked(it));
    }
    expired_ += freed.size();
  }
  return freed.size();
}

ResultUsage ResultStore::usage(ClientId client) const {
  std::lock_guard lock(mutex_);
  auto it = clients_.find(client);
  return it == clients_.end() ? ResultUsage{} : it->second.usage;
}

ResultUsage ResultStore::total() const {
  std::lock_guard lock(mutex_);
  return total_;
}

uint64_t ResultStore::bytes_on(size_t device) const {
  std::lock_guard lock(mutex_);
  const auto it = device_bytes_.find(device);
  return it == device_bytes_.end() ? 0 : it->second;
}

uint64_t ResultStore::expired_count() const {
  std::lock_guard lock(mutex_);
  return expired_;
}

}  // namespace recon::daemon
