// The top-nfeat token selection over many shared-memory tiles (N > 256, nfeat = 300 as the
// official default) against an exact CPU ranking: an identity whitening and tokens whose norms are
// small integers make every value exact in fp32, so ties are real and must go to the lower index.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

#include "gpu/models/retrieval/retrieval.h"
#include "gpu/weights/safetensors_writer.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

class RetrievalSelect : public testing::GpuTest {};

TEST_F(RetrievalSelect, KeepsTheTop300OfManyTilesWithTiesToTheLowerIndex) {
  constexpr int64_t d = 8, n = 700, images = 3, keep = 300;
  std::vector<double> m(d, 0.0), p(d * d, 0.0);
  for (int64_t i = 0; i < d; ++i) p[i * d + i] = 1.0;
  SafetensorsWriter w;
  ASSERT_TRUE(w.add_tensor("prewhiten.m", Dtype::kF64, {1, d}, std::as_bytes(std::span(m))).is_ok());
  ASSERT_TRUE(w.add_tensor("prewhiten.p", Dtype::kF64, {d, d}, std::as_bytes(std::span(p))).is_ok());
  auto file = SafetensorsFile::from_bytes(w.serialize());
  ASSERT_TRUE(file.is_ok());
  auto model = RetrievalModel::from_safetensors(rt(), *file);  // no metadata: nfeat = 300
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();

  // Token t of image b: one non-zero entry of value in 1..200 (many ties), in a varying channel.
  std::mt19937 gen(5);
  std::uniform_int_distribution<int> value(1, 200), channel(0, d - 1);
  std::vector<float> x(images * n * d, 0.0f);
  std::vector<float> norm(images * n);
  for (int64_t t = 0; t < images * n; ++t) {
    norm[t] = static_cast<float>(value(gen));
    x[t * d + channel(gen)] = (t % 2 ? -1.0f : 1.0f) * norm[t];
  }
  auto out = (*model)->encode(testing::upload_f32(rt(), DType::kF32, {images, n, d}, x));
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ(out->token_index.shape(), (Shape{images, keep}));
  std::vector<int32_t> idx(images * keep);
  ASSERT_TRUE(out->token_index.download(rt(), idx.data(), idx.size() * 4).is_ok());
  const std::vector<float> attn = testing::download_f32(rt(), out->attention);
  const std::vector<float> feat = testing::download_f32(rt(), out->features);
  for (int64_t b = 0; b < images; ++b) {
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t i, int32_t j) { return norm[b * n + i] > norm[b * n + j]; });
    for (int64_t r = 0; r < keep; ++r) {
      ASSERT_EQ(idx[b * keep + r], order[r]) << "image " << b << " rank " << r;
      EXPECT_NEAR(attn[b * keep + r], norm[b * n + order[r]], 1e-6 * norm[b * n + order[r]]);  // GLSL sqrt: ulps
      EXPECT_EQ(std::memcmp(&feat[(b * keep + r) * d], &x[(b * n + order[r]) * d], d * 4), 0);
    }
  }
}

}  // namespace
}  // namespace recon::gpu
