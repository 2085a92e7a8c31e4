// ResultStore: handles bound to their session, quotas counted from admission, TTL expiry and
// the end of a session. No GPU: the stored tensors are empty.
#include "daemon/serving/result_store.h"

#include <gtest/gtest.h>

namespace recon::daemon {
namespace {

StoredResult result_of(uint64_t bytes, uint32_t ttl_ms = 1000) {
  StoredResult r;
  r.ttl_ms = ttl_ms;
  StoredTensor t;
  t.name = "conf_1";
  t.bytes = bytes;
  r.tensors.push_back(std::move(t));
  return r;
}

TEST(ResultStore, HandlesAreFoundOnlyByTheirSession) {
  ResultStore store({4, 1 << 20, 1 << 20});
  store.open_client(1);
  store.open_client(2);
  auto reservation = store.reserve(1);
  ASSERT_TRUE(reservation.is_ok());
  auto stored = store.insert(std::move(reservation).value(), result_of(100));
  ASSERT_TRUE(stored.is_ok());
  const Id128 id = (*stored)->id;
  EXPECT_FALSE(id.is_zero());
  EXPECT_TRUE(store.find(1, id).is_ok());
  EXPECT_EQ(store.find(2, id).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(store.release(2, id));
  EXPECT_TRUE(store.release(1, id));
  EXPECT_FALSE(store.release(1, id)) << "double release";
  EXPECT_EQ(store.total().handles, 0u);
}

TEST(ResultStore, QuotaCountsAdmittedInferencesAndBytes) {
  ResultStore store({2, 1000, 1 << 20});
  store.open_client(1);
  auto first = store.reserve(1);
  auto second = store.reserve(1);
  ASSERT_TRUE(first.is_ok() && second.is_ok());
  EXPECT_EQ(store.reserve(1).status().code(), StatusCode::kResourceExhausted);
  second->reset();  // that inference failed: its slot is free again
  EXPECT_TRUE(store.reserve(1).is_ok());
  auto big = store.insert(std::move(first).value(), result_of(2000));
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted) << "over the byte quota";
  EXPECT_EQ(store.usage(1).reserved, 0u);
}

TEST(ResultStore, ExpiresAtTheTtlAndFreesEverythingWhenTheSessionEnds) {
  ResultStore store({8, 1 << 20, 1 << 20});
  store.open_client(1);
  const auto now = SteadyClock::now();
  auto a = store.insert(store.reserve(1).value(), result_of(10, 100), now);
  auto b = store.insert(store.reserve(1).value(), result_of(10, 10'000), now);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(store.expire(now + std::chrono::milliseconds(50)), 0u);
  EXPECT_EQ(store.expire(now + std::chrono::milliseconds(150)), 1u);
  EXPECT_EQ(store.find(1, (*a)->id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store.expired_count(), 1u);
  auto pending = store.reserve(1);
  ASSERT_TRUE(pending.is_ok());
  EXPECT_EQ(store.close_client(1), 1u);
  EXPECT_EQ(store.total().bytes, 0u);
  // The inference that was running when the session ended is dropped on insert.
  EXPECT_EQ(store.insert(std::move(pending).value(), result_of(10)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store.reserve(1).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace recon::daemon
