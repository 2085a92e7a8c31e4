// The GPU exhaustive matcher (gpu/models/match/) against a CPU float64 reference written here:
// top-k per query pixel (ties to the lower index), reciprocity (a among its candidate's top-k),
// the sqrt(c1·c2) confidence threshold, the border filter, and the order (A pixel, then B pixel);
// random maps are drawn without near-ties at the top-k boundary so that fp32 and float64 agree.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "gpu/models/match/match.h"
#include "gpu/models/match/match_kernels.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/models/match/match_test_util.h"

namespace recon::gpu {
namespace {

using testing::GpuTest;
using testing::HostMap;

struct RefExhaustive {
  std::vector<int32_t> idx_a, idx_b;
  double min_gap = INFINITY;  // smallest k-th / (k+1)-th margin the result depends on
};

RefExhaustive exhaustive_ref(const HostMap& a, const HostMap& b, std::vector<int32_t> queries, int k, bool reciprocal,
                             const std::vector<float>* conf_a, const std::vector<float>* conf_b, float threshold,
                             int border) {
  std::sort(queries.begin(), queries.end());
  queries.erase(std::unique(queries.begin(), queries.end()), queries.end());
  RefExhaustive r;
  std::map<int32_t, std::vector<int32_t>> back;  // B pixel -> its top-k in A
  for (int32_t q : queries) {
    const auto top = testing::topk_ref(a.px(q), b, k);
    r.min_gap = std::min(r.min_gap, testing::gap_after(a.px(q), b, k));
    std::vector<int32_t> kept;
    for (int32_t c : top) {
      bool ok = true;
      if (reciprocal) {
        auto it = back.find(c);
        if (it == back.end()) {
          it = back.emplace(c, testing::topk_ref(b.px(c), a, k)).first;
          r.min_gap = std::min(r.min_gap, testing::gap_after(b.px(c), a, k));
        }
        ok = std::find(it->second.begin(), it->second.end(), q) != it->second.end();
      }
      if (ok && conf_a) ok = std::sqrt((*conf_a)[q] * (*conf_b)[c]) >= threshold;
      if (ok && testing::inside(q, a.h, a.w, border) && testing::inside(c, b.h, b.w, border)) kept.push_back(c);
    }
    std::sort(kept.begin(), kept.end());
    for (int32_t c : kept) {
      r.idx_a.push_back(q);
      r.idx_b.push_back(c);
    }
  }
  return r;
}

std::vector<int32_t> all_pixels(const HostMap& m, int subsample) {
  return match_seed_grid(m.h, m.w, subsample);
}

class ExhaustiveMatch : public GpuTest {
 protected:
  Tensor upload(const HostMap& m) {
    auto t = Tensor::from_host(rt(), DType::kF32, {m.h, m.w, m.d}, m.v.data(), m.v.size() * sizeof(float));
    EXPECT_TRUE(t.is_ok());
    return std::move(t).value();
  }
  HostMatches run(const HostMap& a, const HostMap& b, const ExhaustiveMatchOptions& o, const MatchMaps& maps = {}) {
    auto r = match_exhaustive(rt(), upload(a), upload(b), o, maps);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    if (!r.is_ok()) return {};
    auto h = r->to_host(rt());
    EXPECT_TRUE(h.is_ok()) << h.status().to_string();
    if (!h.is_ok()) return {};
    for (size_t i = 0; i < h->size(); ++i) {
      EXPECT_EQ(h->xy_a[2 * i] + h->xy_a[2 * i + 1] * a.w, h->idx_a[i]);
      EXPECT_EQ(h->xy_b[2 * i] + h->xy_b[2 * i + 1] * b.w, h->idx_b[i]);
      EXPECT_NEAR(h->score[i], testing::dot(a.px(h->idx_a[i]), b.px(h->idx_b[i]), a.d), 1e-5);
    }
    EXPECT_TRUE(h->active_per_step.empty());
    return std::move(h).value();
  }
};

TEST_F(ExhaustiveMatch, TensorCoreSearchFindsTheBestPixelWithinItsRounding) {
  // Every pixel's nearest neighbour, one way: the chosen pixel scores within the path's rounding of
  // the float64 best (split products ~1e-6; fp16-rounded unit descriptors ~1e-3), and the reported
  // score is the chosen pixel's. 1,961 database pixels: the last chunk and tile are partial.
  for (int mode : {2, 3}) {
    MatchTuning t;
    t.tensor = mode;
    if (!match_detail::nn_geometry(rt().caps(), 24, 1, t).tensor) GTEST_SKIP() << "no tensor-core search here";
    const double tol = mode == 2 ? 2e-6 : 4e-3;
    for (int64_t d : {8, 24, 32}) {
      SCOPED_TRACE("mode " + std::to_string(mode) + ", D " + std::to_string(d));
      const HostMap a = testing::random_unit_map(40, 44, d, 11), b = testing::random_unit_map(37, 53, d, 12);
      ExhaustiveMatchOptions o;
      o.reciprocal = false;
      o.border = 0;
      o.tuning = t;
      auto r = match_exhaustive(rt(), upload(a), upload(b), o, {});
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      auto h = r->to_host(rt());
      ASSERT_TRUE(h.is_ok()) << h.status().to_string();
      ASSERT_EQ(h->size(), static_cast<size_t>(a.n()));
      int exact = 0;
      for (size_t i = 0; i < h->size(); ++i) {
        const float* q = a.px(h->idx_a[i]);
        const int32_t best = testing::nn_ref(q, b);
        const double chosen = testing::dot(q, b.px(h->idx_b[i]), d);
        EXPECT_GE(chosen, testing::dot(q, b.px(best), d) - tol) << "query " << h->idx_a[i];
        EXPECT_NEAR(h->score[i], chosen, tol) << "query " << h->idx_a[i];
        exact += h->idx_b[i] == best;
      }
      // Near-ties within the rounding are rare on random unit vectors: most choices are the best.
      EXPECT_GE(exact, static_cast<int>(0.95 * static_cast<double>(h->size())));
    }
  }
}

struct Case {
  std::string name;
  int64_t ha, wa, hb, wb, d;
  int k;
  bool reciprocal;
  int subsample, border;
  bool explicit_queries = false;
  MatchTuning tuning = {};
};

TEST_F(ExhaustiveMatch, MatchesTheCpuReference) {
  const std::vector<Case> cases = {
      // (K, D) pairs are few on purpose: each is another pipeline, slow to build on lavapipe.
      {"mutual_nn_every_pixel", 20, 24, 22, 18, 24, 1, true, 1, 3},
      {"mutual_nn_subsampled_grid5", 21, 19, 18, 20, 24, 1, true, 3, 0, false, {5, 0, 0}},
      {"top3_one_way_subsampled", 17, 21, 19, 15, 24, 3, false, 2, 0},
      {"top3_mutual_given_queries", 18, 20, 16, 22, 24, 3, true, 1, 1, true},
      {"top3_batched_one_workgroup", 15, 17, 16, 14, 24, 3, true, 1, 2, false, {1, 0, 37}},
      {"top8_dim64", 12, 14, 13, 11, 64, 8, true, 1, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    HostMap a, b;
    std::vector<int32_t> queries;
    RefExhaustive want;
    for (uint32_t seed = 200;; seed += 2) {
      a = testing::random_unit_map(c.ha, c.wa, c.d, seed);
      b = testing::random_unit_map(c.hb, c.wb, c.d, seed + 1);
      if (c.explicit_queries) {
        queries.clear();
        for (int32_t p = static_cast<int32_t>(a.n()) - 1; p >= 0; p -= 3) queries.push_back(p);
        queries.push_back(5);  // a duplicate, and out of order
      } else {
        queries = all_pixels(a, c.subsample);
      }
      want = exhaustive_ref(a, b, queries, c.k, c.reciprocal, nullptr, nullptr, 0, c.border);
      if (want.min_gap > 2e-5) break;
    }
    ExhaustiveMatchOptions o;
    o.top_k = c.k;
    o.reciprocal = c.reciprocal;
    o.subsample = c.subsample;
    o.border = c.border;
    o.tuning = c.tuning;
    if (c.explicit_queries) o.query_pixels = queries;
    const HostMatches h = run(a, b, o);
    EXPECT_GT(want.idx_a.size(), 0u);
    EXPECT_EQ(h.idx_a, want.idx_a);
    EXPECT_EQ(h.idx_b, want.idx_b);
  }
}

TEST_F(ExhaustiveMatch, ConfidenceThresholdUsesTheGeometricMean) {
  HostMap a, b;
  RefExhaustive want;
  const auto conf_a = testing::random_floats(19 * 23, 61, 0.5f, 3.0f),
             conf_b = testing::random_floats(21 * 17, 62, 0.5f, 3.0f);
  const float threshold = 1.6f;
  for (uint32_t seed = 300;; seed += 2) {
    a = testing::random_unit_map(19, 23, 24, seed);
    b = testing::random_unit_map(21, 17, 24, seed + 1);
    want = exhaustive_ref(a, b, all_pixels(a, 1), 3, true, &conf_a, &conf_b, threshold, 1);
    if (want.min_gap > 2e-5) break;
  }
  const RefExhaustive unfiltered = exhaustive_ref(a, b, all_pixels(a, 1), 3, true, nullptr, nullptr, 0, 1);
  EXPECT_LT(want.idx_a.size(), unfiltered.idx_a.size());
  EXPECT_GT(want.idx_a.size(), 0u);
  MatchMaps maps;
  maps.conf_a = testing::upload_f32(rt(), DType::kF32, {19, 23}, conf_a);
  maps.conf_b = testing::upload_f32(rt(), DType::kF32, {21, 17}, conf_b);
  ExhaustiveMatchOptions o;
  o.top_k = 3;
  o.confidence_threshold = threshold;
  o.border = 1;
  const HostMatches h = run(a, b, o, maps);
  EXPECT_EQ(h.idx_a, want.idx_a);
  EXPECT_EQ(h.idx_b, want.idx_b);
  ASSERT_EQ(h.conf.size(), h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    EXPECT_GE(h.conf[i], threshold);
    EXPECT_EQ(h.conf_a[i], conf_a[static_cast<size_t>(h.idx_a[i])]);
    EXPECT_EQ(h.conf_b[i], conf_b[static_cast<size_t>(h.idx_b[i])]);
  }
}

TEST_F(ExhaustiveMatch, ExactTiesRankTheLowerIndexFirst) {
  const HostMap a = testing::quantised_map(11, 13, 4, 71), b = testing::quantised_map(12, 10, 4, 72);
  for (int k : {1, 3}) {
    const RefExhaustive want = exhaustive_ref(a, b, all_pixels(a, 1), k, true, nullptr, nullptr, 0, 0);
    ExhaustiveMatchOptions o;
    o.top_k = k;
    o.border = 0;
    for (const MatchTuning& t : {MatchTuning{}, MatchTuning{3, 0, 0}}) {
      o.tuning = t;
      const HostMatches h = run(a, b, o);
      EXPECT_EQ(h.idx_a, want.idx_a) << "k " << k;
      EXPECT_EQ(h.idx_b, want.idx_b) << "k " << k;
    }
  }
}

TEST_F(ExhaustiveMatch, MutualNearestNeighboursContainTheFastMatches) {
  // Every fast-matcher pair is a mutual NN, so the exhaustive k = 1 reciprocal set holds them all.
  const HostMap a = testing::random_unit_map(24, 28, 24, 81), b = testing::random_unit_map(26, 22, 24, 82);
  FastMatchOptions fo;
  fo.subsample = 2;
  auto fast = match_fast_reciprocal(rt(), upload(a), upload(b), fo);
  ASSERT_TRUE(fast.is_ok());
  auto fh = fast->to_host(rt());
  ASSERT_TRUE(fh.is_ok());
  ExhaustiveMatchOptions eo;
  const HostMatches eh = run(a, b, eo);
  ASSERT_GT(fh->size(), 0u);
  std::vector<std::pair<int32_t, int32_t>> all;
  for (size_t i = 0; i < eh.size(); ++i) all.emplace_back(eh.idx_a[i], eh.idx_b[i]);
  for (size_t i = 0; i < fh->size(); ++i) {
    EXPECT_TRUE(std::binary_search(all.begin(), all.end(), std::make_pair(fh->idx_a[i], fh->idx_b[i])))
        << fh->idx_a[i] << " -> " << fh->idx_b[i];
  }
}

TEST_F(ExhaustiveMatch, MisuseIsInvalidArgument) {
  const HostMap a = testing::random_unit_map(8, 8, 24, 91);
  const Tensor ta = upload(a);
  auto expect_invalid = [&](const ExhaustiveMatchOptions& o, const char* what, const MatchMaps& maps = {}) {
    const Status s = match_exhaustive(rt(), ta, ta, o, maps).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << what << ": " << s.to_string();
  };
  ExhaustiveMatchOptions o;
  o.top_k = 0;
  expect_invalid(o, "top_k 0");
  o.top_k = kMaxMatchTopK + 1;
  expect_invalid(o, "top_k too large");
  o = {};
  o.confidence_threshold = 0.5f;
  expect_invalid(o, "threshold without conf maps");
  o.confidence_threshold = NAN;
  expect_invalid(o, "NaN threshold");
  o = {};
  o.query_pixels = {3, 64};
  expect_invalid(o, "query pixel out of range");
  o.query_pixels = {-1};
  expect_invalid(o, "negative query pixel");
  o = {};
  o.subsample = 0;
  expect_invalid(o, "subsample 0");
  o.subsample = 20;
  expect_invalid(o, "no query on the grid");
  o = {};
  o.border = -2;
  expect_invalid(o, "negative border");
  const HostMap tiny = testing::random_unit_map(1, 2, 24, 92);
  ExhaustiveMatchOptions k3;
  k3.top_k = 3;
  const Status s = match_exhaustive(rt(), ta, upload(tiny), k3).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << "top_k above the pixels of B: " << s.to_string();
  EXPECT_TRUE(match_exhaustive(rt(), ta, ta, {}).is_ok());
}

}  // namespace
}  // namespace recon::gpu
