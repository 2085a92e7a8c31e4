#include "gpu/context.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace recon::gpu {
namespace {

std::vector<DeviceInfo> fake_devices() {
  return {{0, "llvmpipe (LLVM 15)", VK_PHYSICAL_DEVICE_TYPE_CPU, 0},
          {1, "Intel(R) UHD Graphics", VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, 0},
          {2, "NVIDIA H100 80GB HBM3", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, 0}};
}

TEST(DeviceSelection, DefaultPrefersDiscreteThenIntegratedThenCpu) {
  auto d = fake_devices();
  EXPECT_EQ(Context::select_device(d, "").value(), 2u);
  d.pop_back();
  EXPECT_EQ(Context::select_device(d, "").value(), 1u);
  d.pop_back();
  EXPECT_EQ(Context::select_device(d, "").value(), 0u);
}

TEST(DeviceSelection, ByIndexAndByCaseInsensitiveNameSubstring) {
  auto d = fake_devices();
  EXPECT_EQ(Context::select_device(d, "0").value(), 0u);
  EXPECT_EQ(Context::select_device(d, "h100").value(), 2u);
  EXPECT_EQ(Context::select_device(d, "LLVMPIPE").value(), 0u);
}

TEST(DeviceSelection, UnknownSelectorIsNotFoundAndListsDevices) {
  auto d = fake_devices();
  auto r = Context::select_device(d, "radeon");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("NVIDIA H100"), std::string::npos);
  auto out_of_range = Context::select_device(d, "7");
  ASSERT_FALSE(out_of_range.is_ok());
  EXPECT_EQ(out_of_range.status().code(), StatusCode::kNotFound);
}

TEST(DeviceSelection, SeveralDevicesAllOrAListAndNeverOneTwice) {
  auto d = fake_devices();
  d.push_back({3, "NVIDIA H100 80GB HBM3", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, 0});
  EXPECT_EQ(Context::select_devices(d, "all").value(), (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(Context::select_devices(d, "3, 0").value(), (std::vector<uint32_t>{3, 0}));
  EXPECT_EQ(Context::select_devices(d, "").value(), (std::vector<uint32_t>{2}));
  EXPECT_EQ(Context::select_devices(d, "llvmpipe").value(), (std::vector<uint32_t>{0}));
  EXPECT_EQ(Context::select_devices(d, "2,h100").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Context::select_devices(d, "0,").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Context::select_devices(d, "0,radeon").status().code(), StatusCode::kNotFound);
  d.erase(d.begin() + 2, d.end());  // no discrete GPU left: "all" is the best device
  EXPECT_EQ(Context::select_devices(d, "ALL").value(), (std::vector<uint32_t>{1}));
}

TEST(Context, CreatesOnTheDefaultDeviceAndReadsCapabilities) {
  auto ctx = Context::create({});
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  const Capabilities& c = ctx.value()->caps();
  EXPECT_FALSE(c.device_name.empty());
  EXPECT_GT(c.max_storage_buffer_range, 0u);
  EXPECT_GE(c.subgroup_size, 1u);
  EXPECT_TRUE(c.timeline_semaphore);
  EXPECT_FALSE(c.heaps.empty());
  EXPECT_NE(ctx.value()->compute_queue().queue, VK_NULL_HANDLE);
}

TEST(Context, HonoursRecondDeviceEnvironmentVariable) {
  ::setenv("RECON_DEVICE", "no-such-device-xyz", 1);
  auto ctx = Context::create({});
  ::unsetenv("RECON_DEVICE");
  ASSERT_FALSE(ctx.is_ok());
  EXPECT_EQ(ctx.status().code(), StatusCode::kNotFound);
}

TEST(Context, ExplicitSelectorWinsOverEnvironment) {
  ::setenv("RECON_DEVICE", "no-such-device-xyz", 1);
  ContextOptions o;
  o.device = "0";
  auto ctx = Context::create(o);
  ::unsetenv("RECON_DEVICE");
  EXPECT_TRUE(ctx.is_ok()) << ctx.status().to_string();
}

TEST(Context, ValidationLayerRunsCleanWhenInstalled) {
  ContextOptions o;
  o.validation = true;
  auto ctx = Context::create(o);
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  EXPECT_EQ(ctx.value()->validation_error_count(), 0u);
}

// Proves the other tests' "no validation errors" assertion can fail: a deliberate misuse is counted.
TEST(Context, CountsValidationErrorsWhenTheLayerIsOn) {
  ContextOptions o;
  o.validation = true;
  auto ctx = Context::create(o);
  ASSERT_TRUE(ctx.is_ok()) << ctx.status().to_string();
  if (!ctx.value()->validation_enabled()) GTEST_SKIP() << "VK_LAYER_KHRONOS_validation is not installed";
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = 0;  // VUID-VkBufferCreateInfo-size-00912
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VkBuffer buffer = VK_NULL_HANDLE;
  (void)vkCreateBuffer(ctx.value()->device(), &info, nullptr, &buffer);
  if (buffer != VK_NULL_HANDLE) vkDestroyBuffer(ctx.value()->device(), buffer, nullptr);
  EXPECT_GT(ctx.value()->validation_error_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
