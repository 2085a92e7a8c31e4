// HostImport: a RW shared mapping imported as a buffer is the same memory on both sides (the
// device reads host writes made after the import, the host sees device writes), tensors view
// ranges of it, and misaligned or empty ranges are refused before the driver sees them.
#include "gpu/host_import.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <numeric>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

class HostImportTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (!rt().caps().external_memory_host) GTEST_SKIP() << "no VK_EXT_external_memory_host";
    align_ = rt().caps().min_imported_host_pointer_alignment;
    bytes_ = 4 * align_;
    map_ = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(map_, MAP_FAILED);
  }
  void TearDown() override {
    if (map_ != nullptr && map_ != MAP_FAILED) ::munmap(map_, bytes_);
    GpuTest::TearDown();
  }
  uint8_t* host() { return static_cast<uint8_t*>(map_); }

  VkDeviceSize align_ = 0, bytes_ = 0;
  void* map_ = nullptr;
};

TEST_F(HostImportTest, DeviceReadsHostWritesMadeAfterTheImport) {
  auto import = HostImport::create(rt().context(), map_, bytes_);
  ASSERT_TRUE(import.is_ok()) << import.status().to_string();
  EXPECT_EQ((*import)->size(), bytes_);
  std::iota(host(), host() + bytes_, uint8_t{7});
  const Tensor all = (*import)->bytes();
  EXPECT_EQ(all.dtype(), DType::kU8);
  EXPECT_EQ(all.numel(), static_cast<int64_t>(bytes_));
  std::vector<uint8_t> got(bytes_);
  ASSERT_TRUE(all.download(rt(), got.data(), got.size()).is_ok());
  EXPECT_EQ(0, std::memcmp(got.data(), host(), bytes_));

  // A view of a range (what an image inside a client region is).
  auto view = all.slice_rows(static_cast<int64_t>(align_), static_cast<int64_t>(align_) + 1000);
  ASSERT_TRUE(view.is_ok());
  std::vector<uint8_t> part(1000);
  ASSERT_TRUE(view->download(rt(), part.data(), part.size()).is_ok());
  EXPECT_EQ(0, std::memcmp(part.data(), host() + align_, part.size()));
}

TEST_F(HostImportTest, HostSeesDeviceWrites) {
  auto import = HostImport::create(rt().context(), map_, bytes_);
  ASSERT_TRUE(import.is_ok()) << import.status().to_string();
  std::vector<uint8_t> pattern(bytes_);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 31 + 3);
  ASSERT_TRUE((*import)->bytes().upload(rt(), pattern.data(), pattern.size()).is_ok());
  EXPECT_EQ(0, std::memcmp(host(), pattern.data(), bytes_));
}

TEST_F(HostImportTest, MisalignedOrEmptyRangesAreRefused) {
  auto code_of = [&](void* p, VkDeviceSize n) {
    auto r = HostImport::create(rt().context(), p, n);
    return r.is_ok() ? StatusCode::kOk : r.status().code();
  };
  EXPECT_EQ(code_of(host() + 64, align_), StatusCode::kInvalidArgument);
  EXPECT_EQ(code_of(map_, align_ + 1), StatusCode::kInvalidArgument);
  EXPECT_EQ(code_of(map_, 0), StatusCode::kInvalidArgument);
  EXPECT_EQ(code_of(nullptr, align_), StatusCode::kInvalidArgument);
  // After refusals, imports and ordinary allocations still work.
  EXPECT_EQ(code_of(map_, bytes_), StatusCode::kOk);
  EXPECT_TRUE(Tensor::empty(rt(), DType::kU8, {1024}, MemoryRole::kStaging).is_ok());
}

TEST_F(HostImportTest, TheMessageNamesTheRule) {
  auto r = HostImport::create(rt().context(), host() + 1, align_);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("multiples of " + std::to_string(align_)), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace recon::gpu
