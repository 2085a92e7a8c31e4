// The binding limit the ops split at (layout.h): it follows the device's maxStorageBufferRange,
// capped for the shaders' 32-bit index arithmetic, and with several devices in one process it is
// the smallest of them. Its own test executable, because the last test lowers the process-wide
// limit for good (ctest also runs every case in a process of its own).
#include <gtest/gtest.h>

#include "gpu/ops/layout.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using testing::GpuTest;

// First in the file: it needs a process in which no Runtime has reported a device yet (ctest runs
// each case in a process of its own; a whole-binary run takes the file's order).
TEST(BindingLimitTest, TheFirstDeviceReplacesTheGuaranteedMinimum) {
  EXPECT_EQ(ops::max_binding_bytes(), ops::kGuaranteedBindingBytes);  // nothing reported yet
  ops::note_device_binding_limit(0xFFFFFFFFull);                      // an NVIDIA device
  EXPECT_EQ(ops::max_binding_bytes(), ops::kMaxBindingBytesCap);      // raised, not kept at the minimum
}

TEST(BindingLimitTest, IsTheDeviceRangeRoundedToTheOffsetAlignmentAndCapped) {
  EXPECT_EQ(ops::binding_limit_for(uint64_t{1} << 27), uint64_t{1} << 27);                  // lavapipe
  EXPECT_EQ(ops::binding_limit_for(0xFFFFFFFFull), ops::kMaxBindingBytesCap);               // NVIDIA: 4 GiB − 1
  EXPECT_EQ(ops::binding_limit_for((uint64_t{1} << 30) + 255), uint64_t{1} << 30);          // rounded down
  EXPECT_EQ(ops::binding_limit_for((uint64_t{1} << 28) + 256), (uint64_t{1} << 28) + 256);  // already aligned
  EXPECT_EQ(ops::binding_limit_for(uint64_t{1} << 40), uint64_t{1} << 31);
  EXPECT_EQ(ops::binding_limit_for(255), 0u);  // nothing usable
  EXPECT_EQ(ops::kMaxBindingBytesCap % ops::kBindingOffsetAlign, 0u);
}

class BindingLimitDeviceTest : public GpuTest {};

// On lavapipe the device's limit equals the guaranteed minimum; on an H100/H200 this checks that
// Runtime::create reported the device (2 GiB, not 128 MiB).
TEST_F(BindingLimitDeviceTest, FollowsTheDeviceCapability) {
  const uint64_t device = ops::binding_limit_for(rt().caps().max_storage_buffer_range);
  ASSERT_GE(device, ops::kGuaranteedBindingBytes) << "Vulkan guarantees 128 MiB";
  EXPECT_EQ(ops::max_binding_bytes(), device);

  // A test may lower it, never raise it above the device's, and 0 gives the device's back.
  ops::set_max_binding_bytes_for_testing(4096);
  EXPECT_EQ(ops::max_binding_bytes(), 4096u);
  ops::set_max_binding_bytes_for_testing(uint64_t{1} << 40);
  EXPECT_EQ(ops::max_binding_bytes(), device);
  ops::set_max_binding_bytes_for_testing(0);
  EXPECT_EQ(ops::max_binding_bytes(), device);

  // A second device with a larger range does not raise it; a range of 0 (unknown) is ignored.
  ops::note_device_binding_limit(0xFFFFFFFFull);
  ops::note_device_binding_limit(0);
  EXPECT_EQ(ops::max_binding_bytes(), device);
}

// Last: lowers the limit for the rest of this process.
TEST_F(BindingLimitDeviceTest, IsTheSmallestOfEveryDeviceReported) {
  const uint64_t device = ops::binding_limit_for(rt().caps().max_storage_buffer_range);
  const uint64_t smaller = device / 2 + 100;  // rounds down to a multiple of 256
  ops::note_device_binding_limit(smaller);
  EXPECT_EQ(ops::max_binding_bytes(), smaller / ops::kBindingOffsetAlign * ops::kBindingOffsetAlign);
  ops::note_device_binding_limit(device);  // the larger device again: no change
  EXPECT_EQ(ops::max_binding_bytes(), smaller / ops::kBindingOffsetAlign * ops::kBindingOffsetAlign);

  // Splitting follows: a row count over the lowered limit is split, at most the limit per binding.
  const uint64_t limit = ops::max_binding_bytes();
  const int64_t rows = ops::rows_per_dispatch({1024}, static_cast<int64_t>(limit / 1024) + 1).value();
  EXPECT_LE(static_cast<uint64_t>(rows) * 1024, limit);
}

}  // namespace
}  // namespace recon::gpu
