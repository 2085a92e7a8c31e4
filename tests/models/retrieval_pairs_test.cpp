// GPU pair selection (select_top_pairs) against float64 CPU math: cosine similarity, each image's
// top-k other images (ties to the lower index, never itself), the undirected pair list, misuse.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "gpu/models/retrieval/retrieval.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

class RetrievalPairs : public testing::GpuTest {
 protected:
  Tensor upload(int64_t b, int64_t d, const std::vector<float>& v) {
    return testing::upload_f32(rt(), DType::kF32, {b, d}, v);
  }
};

// Cosine similarity in float64.
std::vector<double> cosine(const std::vector<float>& g, int64_t b, int64_t d) {
  std::vector<double> norm(static_cast<size_t>(b)), s(static_cast<size_t>(b * b));
  for (int64_t i = 0; i < b; ++i) {
    double n = 0;
    for (int64_t c = 0; c < d; ++c) n += double(g[i * d + c]) * g[i * d + c];
    norm[i] = std::sqrt(n);
  }
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j < b; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < d; ++c) dot += double(g[i * d + c]) * g[j * d + c];
      s[i * b + j] = dot / (norm[i] * norm[j]);
    }
  }
  return s;
}

TEST_F(RetrievalPairs, TopKMatchesFloat64OnRandomEmbeddings) {
  const int64_t b = 40, d = 24;
  const int k = 5;
  const std::vector<float> g = testing::random_floats(static_cast<size_t>(b * d), 7);  // not normalised
  const std::vector<double> s = cosine(g, b, d);
  auto r = select_top_pairs(rt(), upload(b, d, g), k);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  auto h = r->to_host(rt());
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  ASSERT_EQ(h->images, b);
  ASSERT_EQ(h->k, k);
  EXPECT_LE(testing::max_relative_error(h->similarity, s, 1.0), 1e-6);
  for (int64_t i = 0; i < b; ++i) {
    std::vector<int32_t> order(static_cast<size_t>(b));
    std::iota(order.begin(), order.end(), 0);
    order.erase(order.begin() + i);
    std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return s[i * b + x] > s[i * b + y]; });
    const double gap = s[i * b + order[k - 1]] - s[i * b + order[k]];
    ASSERT_GT(gap, 1e-5) << "near-tie in the test data at row " << i;
    for (int j = 0; j < k; ++j) {
      EXPECT_EQ(h->indices[i * k + j], order[j]) << "row " << i << " rank " << j;
      EXPECT_NEAR(h->scores[i * k + j], s[i * b + order[j]], 1e-6);
    }
  }
}

TEST_F(RetrievalPairs, NeverPicksItselfAndBreaksTiesByLowerIndex) {
  // Identical embeddings: every similarity is 1, so each row must list the lowest other indices.
  const int64_t b = 6, d = 8;
  std::vector<float> g(static_cast<size_t>(b * d), 0.25f);
  auto r = select_top_pairs(rt(), upload(b, d, g), 3);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  auto h = r->to_host(rt());
  ASSERT_TRUE(h.is_ok());
  for (int32_t i = 0; i < b; ++i) {
    std::vector<int32_t> want;
    for (int32_t j = 0; j < b && want.size() < 3; ++j) {
      if (j != i) want.push_back(j);
    }
    EXPECT_EQ(std::vector<int32_t>(h->indices.begin() + i * 3, h->indices.begin() + i * 3 + 3), want) << "row " << i;
  }
}

TEST_F(RetrievalPairs, UniquePairsAreUndirectedSortedAndDeduplicated) {
  HostPairCandidates h;
  h.images = 3;
  h.k = 2;
  h.indices = {2, 1, 0, 2, 1, 0};
  h.scores = {0.9f, 0.5f, 0.5f, 0.7f, 0.7f, 0.9f};
  const auto pairs = h.unique_pairs();
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0].a, 0);
  EXPECT_EQ(pairs[0].b, 1);
  EXPECT_EQ(pairs[1].a, 0);
  EXPECT_EQ(pairs[1].b, 2);
  EXPECT_FLOAT_EQ(pairs[1].score, 0.9f);
  EXPECT_EQ(pairs[2].a, 1);
  EXPECT_EQ(pairs[2].b, 2);
}

TEST_F(RetrievalPairs, RejectsBadArguments) {
  const std::vector<float> g = testing::random_floats(4 * 8, 1);
  const Tensor t = upload(4, 8, g);
  EXPECT_EQ(select_top_pairs(rt(), t, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(select_top_pairs(rt(), t, 4).status().code(), StatusCode::kInvalidArgument);  // k ≥ B
  EXPECT_EQ(select_top_pairs(rt(), t, -1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(select_top_pairs(rt(), upload(1, 8, std::vector<float>(8, 1.0f)), 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(select_top_pairs(rt(), Tensor(), 1).status().code(), StatusCode::kInvalidArgument);
  auto t3 = t.reshape({2, 2, 8});
  ASSERT_TRUE(t3.is_ok());
  EXPECT_EQ(select_top_pairs(rt(), *t3, 1).status().code(), StatusCode::kInvalidArgument);
  const Tensor half = testing::upload_f32(rt(), DType::kF16, {4, 8}, g);
  EXPECT_EQ(select_top_pairs(rt(), half, 1).status().code(), StatusCode::kInvalidArgument);
  auto big = Tensor::empty(rt(), DType::kF32, {200, 8});
  ASSERT_TRUE(big.is_ok());
  EXPECT_EQ(select_top_pairs(rt(), *big, 129).status().code(), StatusCode::kInvalidArgument);  // > kMaxTopK
}

}  // namespace
}  // namespace recon::gpu
