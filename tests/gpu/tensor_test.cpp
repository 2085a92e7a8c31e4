#include "gpu/tensor.h"

#include <gtest/gtest.h>

#include "gpu/ops/elementwise_basic.h"
#include "gpu/transfer.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using testing::GpuTest;
class TensorTest : public GpuTest {};

TEST_F(TensorTest, UploadDownloadRoundTripsEveryDtype) {
  for (DType d : {DType::kF32, DType::kF16, DType::kU8, DType::kI32}) {
    const Shape shape{5, 7};
    std::vector<uint8_t> bytes(35 * dtype_size(d));
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 11);
    auto t = Tensor::from_host(rt(), d, shape, bytes.data(), bytes.size());
    ASSERT_TRUE(t.is_ok()) << dtype_name(d);
    std::vector<uint8_t> back(bytes.size());
    ASSERT_TRUE(t->download(rt(), back.data(), back.size()).is_ok());
    EXPECT_EQ(back, bytes) << dtype_name(d);
  }
}

TEST_F(TensorTest, LargerThanOneStagingChunkRoundTrips) {
  const size_t n = (kStagingChunkBytes / 4) * 2 + 123;
  auto values = testing::random_floats(n, 3);
  auto t = testing::upload_f32(rt(), DType::kF32, {static_cast<int64_t>(n)}, values);
  EXPECT_EQ(testing::download_f32(rt(), t), values);
}

TEST_F(TensorTest, WrongByteCountIsRefused) {
  auto t = Tensor::empty(rt(), DType::kF32, {4}).value();
  float x[3] = {};
  EXPECT_EQ(t.upload(rt(), x, sizeof(x)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.download(rt(), x, sizeof(x)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor::empty(rt(), DType::kF32, {-1, 2}).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TensorTest, HostCopyIsLazyCachedAndInvalidatedByGraphWrites) {
  auto t = Tensor::empty(rt(), DType::kF32, {16}).value();
  Graph g(rt());
  ASSERT_TRUE(ops::fill(g, t, 2.5f).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  EXPECT_FALSE(t.host_cached());
  auto h = t.host(rt());
  ASSERT_TRUE(h.is_ok());
  EXPECT_TRUE(t.host_cached());
  const float* f = reinterpret_cast<const float*>(h->data());
  EXPECT_EQ(f[15], 2.5f);
  auto h2 = t.host(rt());
  EXPECT_EQ(h2->data(), h->data()) << "second access uses the cached copy";

  Graph g2(rt());
  ASSERT_TRUE(ops::fill(g2, t, -1.0f).is_ok());
  ASSERT_TRUE(g2.run().is_ok());
  EXPECT_FALSE(t.host_cached()) << "a graph that writes the tensor drops its stale host copy";
  f = reinterpret_cast<const float*>(t.host(rt())->data());
  EXPECT_EQ(f[0], -1.0f);
}

TEST_F(TensorTest, ViewsShareStorageAndSeeTheRightElements) {
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = static_cast<float>(i);
  auto t = testing::upload_f32(rt(), DType::kF32, {4, 6}, v);
  auto rows = t.slice_rows(1, 3);
  ASSERT_TRUE(rows.is_ok());
  EXPECT_EQ(rows->shape(), (Shape{2, 6}));
  auto got = testing::download_f32(rt(), rows.value());
  EXPECT_EQ(got.front(), 6.0f);
  EXPECT_EQ(got.back(), 17.0f);
  auto flat = t.reshape({24});
  ASSERT_TRUE(flat.is_ok());
  EXPECT_EQ(flat->strides(), (std::vector<int64_t>{1}));
  EXPECT_FALSE(t.reshape({5, 5}).is_ok());
  EXPECT_FALSE(t.slice_rows(3, 5).is_ok());
  // Host copy through a view is the view's own bytes.
  auto h = rows->host(rt());
  ASSERT_TRUE(h.is_ok());
  EXPECT_EQ(h->size(), 12u * 4);
  EXPECT_EQ(reinterpret_cast<const float*>(h->data())[0], 6.0f);
}

}  // namespace
}  // namespace recon::gpu
