// copy_tensors_to_host, on a OneShot of the device's copy queue as the fetch thread uses it: the
// staging path cuts a tensor larger than a staging chunk into pieces and packs small ones
// together; the import path has the GPU write straight into imported host memory. Both must give
// the device's bytes exactly, and a destination outside the import is refused.
#include "gpu/tensor_copies.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <vector>

#include "gpu/transfer.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

class TensorCopies : public testing::GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    Context& context = rt().context();
    auto one = OneShot::create(context.device(), context.copy_queue());
    ASSERT_TRUE(one.is_ok()) << one.status().to_string();
    copies_ = std::move(one).value();
    // One tensor over a staging chunk (so it goes in two pieces), small ones around it.
    for (const size_t n : {size_t{1000}, size_t{kStagingChunkBytes + 4108}, size_t{12}, size_t{300'000}}) {
      std::vector<uint8_t> bytes(n);
      for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>((i * 131 + n) >> 3);
      auto t = Tensor::from_host(rt(), DType::kU8, {static_cast<int64_t>(n)}, bytes.data(), n);
      ASSERT_TRUE(t.is_ok()) << t.status().to_string();
      tensors_.push_back(std::move(t).value());
      expected_.push_back(std::move(bytes));
    }
  }

  std::unique_ptr<OneShot> copies_;
  std::vector<Tensor> tensors_;
  std::vector<std::vector<uint8_t>> expected_;
};

TEST_F(TensorCopies, ThroughStagingLargeTensorsInPiecesAndSmallOnesTogether) {
  std::vector<std::vector<uint8_t>> out(tensors_.size());
  std::vector<TensorCopy> copies;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    out[i].assign(expected_[i].size(), 0xEE);
    copies.push_back(TensorCopy{&tensors_[i], out[i].data()});
  }
  ASSERT_TRUE(copy_tensors_to_host(rt(), *copies_, copies, nullptr).is_ok());
  for (size_t i = 0; i < tensors_.size(); ++i) EXPECT_EQ(out[i], expected_[i]) << "tensor " << i;
}

TEST_F(TensorCopies, IntoImportedHostMemoryInOneSubmission) {
  if (!rt().caps().external_memory_host) GTEST_SKIP() << "no VK_EXT_external_memory_host";
  const size_t align = rt().caps().min_imported_host_pointer_alignment;
  size_t total = 0;
  std::vector<size_t> offsets;
  for (const auto& e : expected_) {
    offsets.push_back(total);
    total = (total + e.size() + 255) / 256 * 256;
  }
  const size_t bytes = (total + align - 1) / align * align;
  void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  auto* host = static_cast<uint8_t*>(map);
  {
    auto import = HostImport::create(rt().context(), map, bytes);
    ASSERT_TRUE(import.is_ok()) << import.status().to_string();
    std::vector<TensorCopy> copies;
    for (size_t i = 0; i < tensors_.size(); ++i) copies.push_back(TensorCopy{&tensors_[i], host + offsets[i]});
    ASSERT_TRUE(copy_tensors_to_host(rt(), *copies_, copies, import->get()).is_ok());
    for (size_t i = 0; i < tensors_.size(); ++i) {
      EXPECT_EQ(std::vector<uint8_t>(host + offsets[i], host + offsets[i] + expected_[i].size()), expected_[i])
          << "tensor " << i;
    }
    // A destination that runs past the import is refused before anything is recorded.
    const TensorCopy past{&tensors_[0], host + bytes - 10};
    EXPECT_EQ(copy_tensors_to_host(rt(), *copies_, std::span(&past, 1), import->get()).code(), StatusCode::kInternal);
  }
  ::munmap(map, bytes);
}

}  // namespace
}  // namespace recon::gpu
