#include "gpu/graph_schedule.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace recon::gpu {
namespace {

// Fake buffer handles: the scheduler only compares them.
VkBuffer buf(uintptr_t id) {
  return reinterpret_cast<VkBuffer>(id);
}  // NOLINT(performance-no-int-to-ptr)
BufferAccess rd(uintptr_t b, VkDeviceSize begin = 0, VkDeviceSize end = 64) {
  return {buf(b), begin, end, false};
}
BufferAccess wr(uintptr_t b, VkDeviceSize begin = 0, VkDeviceSize end = 64) {
  return {buf(b), begin, end, true};
}

using Order = std::vector<size_t>;

TEST(GraphSchedule, IndependentChainsInterleaveStepByStep) {
  // Chain A: 0 → 1 → 2 (buffers 1, 2, 3); chain B: 3 → 4 (buffers 11, 12, 13), issued after A.
  const std::vector<std::vector<BufferAccess>> acc = {
      {wr(1)}, {rd(1), wr(2)}, {rd(2), wr(3)}, {wr(11)}, {rd(11), wr(12)}};
  EXPECT_EQ(order_by_dependency_level(acc, {}), (Order{0, 3, 1, 4, 2}));
}

TEST(GraphSchedule, WriteAfterReadStaysAfterTheRead) {
  // 1 reads what 0 wrote; 2 overwrites it, so it must follow 1 although it reads nothing.
  const std::vector<std::vector<BufferAccess>> acc = {{wr(1)}, {rd(1), wr(2)}, {wr(1)}, {wr(5)}};
  EXPECT_EQ(order_by_dependency_level(acc, {}), (Order{0, 3, 1, 2}));
}

TEST(GraphSchedule, ReadsOfTheSameDataDoNotConflict) {
  const std::vector<std::vector<BufferAccess>> acc = {{rd(1), wr(2)}, {rd(1), wr(3)}, {rd(2), rd(3), wr(4)}};
  EXPECT_EQ(order_by_dependency_level(acc, {}), (Order{0, 1, 2}));
}

TEST(GraphSchedule, DisjointRangesOfOneBufferAreIndependent) {
  // Sub-allocated tensors share a VkBuffer; only overlapping byte ranges conflict.
  const std::vector<std::vector<BufferAccess>> acc = {
      {wr(1, 0, 64)}, {rd(1, 0, 64), wr(1, 64, 128)}, {wr(1, 128, 192)}, {rd(1, 63, 65)}};
  EXPECT_EQ(order_by_dependency_level(acc, {}), (Order{0, 2, 1, 3}));
}

TEST(GraphSchedule, DispatchesNeverCrossAFence) {
  // Without the fence at 2, dispatch 3 (independent) would join level 0.
  const std::vector<std::vector<BufferAccess>> acc = {{wr(1)}, {rd(1), wr(2)}, {wr(3)}, {wr(4)}};
  EXPECT_EQ(order_by_dependency_level(acc, {}), (Order{0, 2, 3, 1}));
  EXPECT_EQ(order_by_dependency_level(acc, {2}), (Order{0, 1, 2, 3}));
  EXPECT_EQ(order_by_dependency_level(acc, {0, 4}), (Order{0, 2, 3, 1})) << "fences at the ends change nothing";
}

TEST(GraphSchedule, EveryConflictKeepsProgramOrderOnRandomPrograms) {
  // Random programs over few buffers: any two conflicting dispatches must keep their order.
  uint64_t state = 12345;
  auto next = [&state](uint64_t mod) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % mod;
  };
  for (int program = 0; program < 200; ++program) {
    const size_t n = 1 + next(30);
    std::vector<std::vector<BufferAccess>> acc(n);
    for (auto& a : acc) {
      for (uint64_t k = 0, count = 1 + next(3); k < count; ++k) {
        const VkDeviceSize begin = next(4) * 16;
        a.push_back({buf(1 + next(3)), begin, begin + 16 + next(3) * 16, next(2) == 0});
      }
    }
    std::vector<size_t> fences;
    if (next(3) == 0) fences.push_back(next(n));
    const Order order = order_by_dependency_level(acc, fences);
    ASSERT_EQ(order.size(), n);
    std::vector<size_t> pos(n, n);
    for (size_t p = 0; p < n; ++p) pos[order[p]] = p;
    for (size_t i = 0; i < n; ++i) {
      ASSERT_LT(pos[i], n) << "every dispatch appears once";
      for (size_t j = i + 1; j < n; ++j) {
        bool conflict = false;
        for (const auto& x : acc[i]) {
          for (const auto& y : acc[j]) {
            conflict |= x.buffer == y.buffer && (x.write || y.write) && x.begin < y.end && y.begin < x.end;
          }
        }
        for (size_t f : fences) conflict |= i < f && f <= j;
        if (conflict) {
          ASSERT_LT(pos[i], pos[j]) << "program " << program << ": " << i << " before " << j;
        }
      }
    }
  }
}

}  // namespace
}  // namespace recon::gpu
