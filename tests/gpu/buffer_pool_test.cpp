#include "gpu/buffer_pool.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using testing::GpuTest;

class BufferPoolTest : public GpuTest {
 protected:
  std::unique_ptr<BufferPool> make(PoolOptions o) {
    auto p = BufferPool::create(rt().context(), o);
    EXPECT_TRUE(p.is_ok()) << p.status().to_string();
    return std::move(p).value();
  }
};

TEST(BufferPoolClasses, AreThePowerOfTwoThatHoldsTheRequest) {
  EXPECT_EQ(BufferPool::class_bytes(1), 256u);
  EXPECT_EQ(BufferPool::class_bytes(256), 256u);
  EXPECT_EQ(BufferPool::class_bytes(257), 512u);
  EXPECT_EQ(BufferPool::class_bytes((1 << 20) + 1), 2u << 20);
}

TEST_F(BufferPoolTest, ReusesReleasedBlockOfSameClass) {
  auto pool = make({});
  VkBuffer buffer;
  VkDeviceSize offset;
  {
    auto a = pool->acquire(1000);
    ASSERT_TRUE(a.is_ok());
    buffer = a->buffer();
    offset = a->offset();
    EXPECT_EQ(a->capacity(), 1024u);
  }
  auto b = pool->acquire(900);  // same 1 KiB class
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->buffer(), buffer);
  EXPECT_EQ(b->offset(), offset);
  PoolStats s = pool->stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.blocks, 1u);
}

TEST_F(BufferPoolTest, SmallAllocationsShareOneBlockAtDistinctOffsets) {
  auto pool = make({});
  std::vector<PoolBuffer> held;
  for (int i = 0; i < 16; ++i) held.push_back(pool->acquire(4096).value());
  for (size_t i = 1; i < held.size(); ++i) {
    EXPECT_EQ(held[i].buffer(), held[0].buffer());
    EXPECT_NE(held[i].offset(), held[i - 1].offset());
    EXPECT_EQ(held[i].offset() % rt().caps().min_storage_buffer_offset_alignment, 0u);
  }
  EXPECT_EQ(pool->stats().blocks, 1u);
}

TEST_F(BufferPoolTest, StatisticsTrackInUseReservedAndHighWater) {
  PoolOptions o;
  o.block_size = 4 << 20;
  auto pool = make(o);
  {
    auto a = pool->acquire(100 << 10);  // 128 KiB class
    auto b = pool->acquire(3 << 20);    // large: own 4 MiB block
    PoolStats s = pool->stats();
    EXPECT_EQ(s.in_use_bytes, (128u << 10) + (4u << 20));
    EXPECT_EQ(s.live_allocations, 2u);
    EXPECT_EQ(s.reserved_bytes, (4u << 20) + (4u << 20));
  }
  PoolStats s = pool->stats();
  EXPECT_EQ(s.in_use_bytes, 0u);
  EXPECT_EQ(s.live_allocations, 0u);
  EXPECT_EQ(s.high_water_bytes, (128u << 10) + (4u << 20));
  EXPECT_EQ(s.reserved_bytes, 8u << 20) << "released blocks stay reserved until they age out";
}

TEST_F(BufferPoolTest, IdleBlocksAgeOutToTheDriver) {
  PoolOptions o;
  o.idle_age = std::chrono::milliseconds(20);
  auto pool = make(o);
  { auto a = pool->acquire(1 << 20); }
  EXPECT_EQ(pool->trim(), 0u) << "too young to be trimmed";
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  EXPECT_EQ(pool->trim(), 1u);
  EXPECT_EQ(pool->stats().reserved_bytes, 0u);
  EXPECT_EQ(pool->stats().trimmed_blocks, 1u);
}

TEST_F(BufferPoolTest, BlocksInUseAreNeverTrimmed) {
  auto pool = make({});
  auto a = pool->acquire(1 << 20);
  EXPECT_EQ(pool->trim(/*all=*/true), 0u);
  EXPECT_GT(pool->stats().reserved_bytes, 0u);
}

TEST_F(BufferPoolTest, CapYieldsResourceExhaustedNotACrash) {
  PoolOptions o;
  o.block_size = 1 << 20;
  o.cap = 2 << 20;
  auto pool = make(o);
  auto a = pool->acquire(1 << 20);
  auto b = pool->acquire(1 << 20);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  auto c = pool->acquire(1 << 20);
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("cap"), std::string::npos);
  a->reset();
  EXPECT_TRUE(pool->acquire(1 << 20).is_ok()) << "released memory is usable again under the cap";
}

TEST_F(BufferPoolTest, CapEvictsIdleBlocksOfOtherClassesBeforeFailing) {
  PoolOptions o;
  o.block_size = 1 << 20;
  o.cap = 1 << 20;
  auto pool = make(o);
  { auto a = pool->acquire(4096); }  // reserves the only block for the 4 KiB class
  auto b = pool->acquire(8192);      // another class: the idle block must be given back first
  EXPECT_TRUE(b.is_ok()) << b.status().to_string();
}

TEST_F(BufferPoolTest, ExactLargeBlocksGoBackOnRelease) {
  PoolOptions o;
  o.role = MemoryRole::kWeights;
  o.block_size = 4 << 20;
  o.exact_large = true;
  auto pool = make(o);
  {
    auto w = pool->acquire(3 << 20);
    ASSERT_TRUE(w.is_ok());
    EXPECT_EQ(w->capacity(), 3u << 20) << "weights are not rounded to a power of two";
  }
  EXPECT_EQ(pool->stats().reserved_bytes, 0u);
}

TEST_F(BufferPoolTest, StagingPoolIsHostMapped) {
  PoolOptions o;
  o.role = MemoryRole::kStaging;
  auto pool = make(o);
  auto s = pool->acquire(4096);
  ASSERT_TRUE(s.is_ok());
  ASSERT_NE(s->mapped(), nullptr);
  static_cast<char*>(s->mapped())[4095] = 1;
}

TEST_F(BufferPoolTest, ZeroByteRequestIsInvalid) {
  auto pool = make({});
  auto r = pool->acquire(0);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(BufferPoolTest, ConcurrentAcquireAndReleaseKeepStatisticsConsistent) {
  PoolOptions o;
  o.block_size = 4 << 20;
  auto pool = make(o);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 gen(t);
      std::uniform_int_distribution<int> size(1, 200000);
      std::vector<PoolBuffer> held;
      for (int i = 0; i < 2000; ++i) {
        auto b = pool->acquire(size(gen));
        ASSERT_TRUE(b.is_ok());
        held.push_back(std::move(b).value());
        if (held.size() > 8) held.erase(held.begin() + static_cast<long>(gen() % held.size()));
      }
    });
  }
  for (auto& th : threads) th.join();
  PoolStats s = pool->stats();
  EXPECT_EQ(s.live_allocations, 0u);
  EXPECT_EQ(s.in_use_bytes, 0u);
  EXPECT_EQ(s.hits + s.misses, 8000u);
  EXPECT_GT(s.hits, s.misses * 10) << "steady-state reuse should dominate";
}

}  // namespace
}  // namespace recon::gpu
