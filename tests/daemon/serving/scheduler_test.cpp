// Scheduler: admission, round-robin fairness between sessions, batching of same-size pairs,
// lanes, dropping a session's jobs and closing. No GPU: jobs are plain data here.
#include "daemon/serving/scheduler.h"

#include <gtest/gtest.h>

#include <thread>

namespace recon::daemon {
namespace {

// A batchable request of `rows` rows (a pair: 1) whose model batches by `rule`.
BatchWork job(ClientId client, uint64_t id, ImageSize size = {48, 64}, BatchRule rule = {}, uint32_t rows = 1) {
  BatchWork j;
  j.context.reply.client = client;
  j.context.reply.request_id = id;
  j.key = BatchKey{"mast3r", size.to_string()};
  j.rule = rule;
  j.rows = rows;
  return j;
}

// MASt3R pairs batched up to `max_batch` in powers of two, the first waiting up to `wait`.
BatchRule pairs_of(uint32_t max_batch, std::chrono::microseconds wait = {}) {
  return BatchRule{max_batch, wait, true};
}

Scheduler make(uint32_t max_queue = 16) {
  return Scheduler(SchedulerOptions{max_queue, 16}, 1, [](size_t, const std::string&) { return true; });
}

std::vector<uint64_t> ids(const Work& work) {
  std::vector<uint64_t> out;
  for (const BatchWork& j : std::get<std::vector<BatchWork>>(work)) out.push_back(j.context.reply.request_id);
  return out;
}

TEST(Scheduler, RefusesWorkBeyondTheQueueLimit) {
  Scheduler s = make(2);
  EXPECT_TRUE(s.submit(job(1, 1)).is_ok());
  EXPECT_TRUE(s.submit(job(1, 2)).is_ok());
  const Status full = s.submit(job(2, 3));
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.stats().pending, 2u);
  EXPECT_EQ(s.stats().rejected_full, 1u);
}

TEST(Scheduler, ServesSessionsRoundRobin) {
  Scheduler s = make();
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(s.submit(job(1, 10 + i)).is_ok());  // a busy client
  ASSERT_TRUE(s.submit(job(2, 20)).is_ok());
  ASSERT_TRUE(s.submit(job(3, 30)).is_ok());
  std::vector<uint64_t> order;
  Work work;
  while (s.next(0, std::chrono::milliseconds(0), work) == Scheduler::Wait::kWork) {
    order.push_back(ids(work).front());
    s.finished(0, 1);
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{10, 20, 30, 11, 12, 13}));
}

TEST(Scheduler, SoloJobsWaitInTheSessionFifoRunAloneAndMatchesStayOnTheirDevice) {
  Scheduler s(SchedulerOptions{16, 16}, 2, [](size_t, const std::string&) { return true; });
  ASSERT_TRUE(s.submit(job(1, 1, {48, 64}, pairs_of(4))).is_ok());
  KindWork batch;  // an InferBatch
  batch.context.reply.client = 1;
  batch.context.reply.request_id = 2;
  batch.model = "mast3r";
  ASSERT_TRUE(s.submit(SoloWork(std::move(batch))).is_ok());
  ASSERT_TRUE(s.submit(job(1, 3, {48, 64}, pairs_of(4))).is_ok());
  KindWork match;  // a Match of descriptors held on device 1
  match.context.reply.client = 2;
  match.context.reply.request_id = 4;
  match.model = "match";
  match.device = 1;
  ASSERT_TRUE(s.submit(SoloWork(std::move(match))).is_ok());
  EXPECT_EQ(s.stats().pending, 4u);

  Work work;
  // Device 0: the pair before the batch (the batch is not batched with it), then the batch, then
  // the last pair; the match waits for device 1.
  ASSERT_EQ(s.next(0, std::chrono::milliseconds(0), work), Scheduler::Wait::kWork);
  EXPECT_EQ(ids(work), (std::vector<uint64_t>{1}));
  ASSERT_EQ(s.next(0, std::chrono::milliseconds(0), work), Scheduler::Wait::kWork);
  ASSERT_TRUE(std::holds_alternative<SoloWork>(work));
  EXPECT_EQ(std::get<KindWork>(std::get<SoloWork>(work)).context.reply.request_id, 2u);
  ASSERT_EQ(s.next(0, std::chrono::milliseconds(0), work), Scheduler::Wait::kWork);
  EXPECT_EQ(ids(work), (std::vector<uint64_t>{3}));
  EXPECT_EQ(s.next(0, std::chrono::milliseconds(0), work), Scheduler::Wait::kIdle);
  ASSERT_EQ(s.next(1, std::chrono::milliseconds(0), work), Scheduler::Wait::kWork);
  EXPECT_EQ(std::get<KindWork>(std::get<SoloWork>(work)).context.reply.request_id, 4u);
}

TEST(Scheduler, DroppingASessionReturnsItsSoloJobs) {
  Scheduler s = make();
  KindWork batch;
  batch.context.reply.client = 5;
  ASSERT_TRUE(s.submit(SoloWork(std::move(batch))).is_ok());
  const DroppedJobs dropped = s.drop_client(5);
  EXPECT_EQ(dropped.solo.size(), 1u);
  EXPECT_EQ(s.stats().pending, 0u);
}

TEST(Scheduler, BatchesSameSizePairsAcrossSessionsInPowersOfTwo) {
  Scheduler s = make(16);
  const BatchRule rule = pairs_of(4);
  ASSERT_TRUE(s.submit(job(1, 1, {48, 64}, rule)).is_ok());
  ASSERT_TRUE(s.submit(job(1, 2, {48, 64}, rule)).is_ok());
  ASSERT_TRUE(s.submit(job(2, 3, {48, 64}, rule)).is_ok());
  ASSERT_TRUE(s.submit(job(3, 4, {64, 64}, rule)).is_ok());  // another size: not in this batch
  ASSERT_TRUE(s.submit(job(4, 5, {48, 64}, rule)).is_ok());
  Work work;
  ASSERT_EQ(s.next(0, std::chrono::milliseconds(0), work), Scheduler::Wait::kWork);
  // Round 1 takes the head of sessions 1, 2, 4; round 2 the second of session 1.
  EXPECT_EQ(ids(work), (std::vector<uint64_t>{1, 2, 3, 5}));
  ASSERT_EQ(s.next(0, std::chrono::milliseconds(0), work), Scheduler::Wait::kWork);
  EXPECT_EQ(ids(work), (std::vector<uint64_t>{4}));
  // Three same-size pairs run as a batch of 2, then 1.
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(s.submit(job(5 + i, 10 + i, {48, 64}, rule)).is_ok());
  ASSERT_EQ(s.next(0, std::chrono::milliseconds(0), work), Scheduler::Wait::kWork);
  EXPECT_EQ(ids(work).size(), 2u);
  EXPECT_EQ(batch_size_for(3, 4), 2u);
  EXPECT_EQ(batch_size_for(9, 8), 8u);
  EXPECT_EQ(warm_batch_sizes(6), (std::vector<uint32_t>{1, 2, 4, 6}));
}

// A model with dynamic batching over its batch axis (onnx): requests of several rows share a call
// while the rows fit, any sum up to max_rows; a session's requests keep their order.
TEST(Scheduler, BatchesRequestsOfSeveralRowsUpToTheModelsMaxRows) {
  Scheduler s = make(16);
  const BatchRule rule{8, {}, false};
  ASSERT_TRUE(s.submit(job(1, 1, {1, 16}, rule, 3)).is_ok());
  ASSERT_TRUE(s.submit(job(1, 2, {1, 16}, rule, 4)).is_ok());  // 3 + 3 + 4 > 8: waits for the next call
  ASSERT_TRUE(s.submit(job(2, 3, {1, 16}, rule, 3)).is_ok());
  ASSERT_TRUE(s.submit(job(3, 4, {1, 16}, rule, 2)).is_ok());
  ASSERT_TRUE(s.submit(job(4, 5, {1, 16}, rule, 1)).is_ok());
  Work work;
  ASSERT_EQ(s.next(0, std::chrono::milliseconds(0), work), Scheduler::Wait::kWork);
  EXPECT_EQ(ids(work), (std::vector<uint64_t>{1, 3, 4})) << "3 + 3 + 2 rows; 1 more would not fit";
  ASSERT_EQ(s.next(0, std::chrono::milliseconds(0), work), Scheduler::Wait::kWork);
  EXPECT_EQ(ids(work), (std::vector<uint64_t>{5, 2})) << "the rest, 1 + 4 rows, in one call";
  EXPECT_EQ(s.next(0, std::chrono::milliseconds(0), work), Scheduler::Wait::kIdle);
}

// Triton's preferred_batch_size: the largest preferred size the queued rows fill goes at once,
// however long max_wait is; short of every preferred size, the rows wait as before.
TEST(Scheduler, TheLargestPreferredBatchSizeGoesAtOnceAndFewerRowsWait) {
  Scheduler s = make(16);
  BatchRule rule{8, std::chrono::seconds(10), false};
  rule.preferred = {2, 4};
  for (uint64_t i = 1; i <= 5; ++i) ASSERT_TRUE(s.submit(job(ClientId{i}, i, {1, 16}, rule)).is_ok());
  Work work;
  ASSERT_EQ(s.next(0, std::chrono::milliseconds(0), work), Scheduler::Wait::kWork);
  EXPECT_EQ(ids(work), (std::vector<uint64_t>{1, 2, 3, 4})) << "4 rows at once, not waiting 10 s for 8";
  EXPECT_NE(s.next(0, std::chrono::milliseconds(0), work), Scheduler::Wait::kWork)
      << "1 row fills no preferred size: it waits up to max_wait";
}

TEST(Scheduler, WaitsUpToMaxWaitToFillABatch) {
  Scheduler s = make(16);
  const BatchRule rule = pairs_of(4, std::chrono::milliseconds(200));
  ASSERT_TRUE(s.submit(job(1, 1, {48, 64}, rule)).is_ok());
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    (void)s.submit(job(2, 2, {48, 64}, rule));
  });
  Work work;
  ASSERT_EQ(s.next(0, std::chrono::seconds(2), work), Scheduler::Wait::kWork);
  late.join();
  EXPECT_EQ(ids(work).size(), 2u) << "the second pair arrived within max_wait";
}

// Fetches have their own thread per device: a queued inference neither waits for them nor
// delays them, and a fetch in flight keeps the scheduler busy until it is finished.
TEST(Scheduler, FetchesGoToTheFetchThreadBesideQueuedInference) {
  Scheduler s = make();
  ASSERT_TRUE(s.submit(job(1, 1)).is_ok());
  FetchWork fetch;
  fetch.context.reply.client = 1;
  fetch.context.reply.request_id = 99;
  ASSERT_TRUE(s.submit(std::move(fetch)).is_ok());
  Work work;
  ASSERT_EQ(s.next(0, std::chrono::milliseconds(0), work), Scheduler::Wait::kWork);
  EXPECT_EQ(ids(work), std::vector<uint64_t>{1}) << "the compute thread takes the pair, not the fetch";
  s.finished(0, 1);
  FetchWork taken;
  ASSERT_EQ(s.next_fetch(0, std::chrono::milliseconds(0), taken), Scheduler::Wait::kWork);
  EXPECT_EQ(taken.context.reply.request_id, 99u);
  EXPECT_FALSE(s.idle()) << "the fetch is in flight";
  EXPECT_EQ(s.stats().in_flight, 1u);
  EXPECT_EQ(s.next_fetch(0, std::chrono::milliseconds(0), taken), Scheduler::Wait::kIdle);
  s.fetch_finished(0);
  EXPECT_TRUE(s.idle());
  (void)s.close();
  EXPECT_EQ(s.next_fetch(0, std::chrono::milliseconds(0), taken), Scheduler::Wait::kClosed);
}

TEST(Scheduler, DropsASessionsQueuedJobsAndClosesForShutdown) {
  Scheduler s = make();
  ASSERT_TRUE(s.submit(job(1, 1)).is_ok());
  ASSERT_TRUE(s.submit(job(2, 2)).is_ok());
  ASSERT_TRUE(s.submit(job(1, 3)).is_ok());
  DroppedJobs dropped = s.drop_client(1);
  EXPECT_EQ(dropped.batched.size(), 2u);
  EXPECT_EQ(s.stats().pending, 1u);
  DroppedJobs rest = s.close();
  EXPECT_EQ(rest.batched.size(), 1u);
  EXPECT_EQ(s.submit(job(3, 4)).code(), StatusCode::kUnavailable);
  Work work;
  EXPECT_EQ(s.next(0, std::chrono::milliseconds(0), work), Scheduler::Wait::kClosed);
  EXPECT_TRUE(s.idle());
}

TEST(Scheduler, IdleWorkersWakeForHeartbeats) {
  Scheduler s = make();
  Work work;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(s.next(0, std::chrono::milliseconds(20), work), Scheduler::Wait::kIdle);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(20));
}

}  // namespace
}  // namespace recon::daemon
