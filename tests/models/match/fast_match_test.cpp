// The GPU fast reciprocal matcher (gpu/models/match/) against the reference's golden match sets
// (tests/golden/match/, made by tests/reference/fast_nn_ref.py from maps without near-ties): the
// same pairs exactly, and the same number of active seeds at every step. Plus a CPU float64
// reference on random and tie-heavy maps, every kernel geometry, the gathered maps, matcher
// reuse, and misuse → INVALID_ARGUMENT.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "gpu/models/match/match.h"
#include "gpu/models/match/match_kernels.h"
#include "gpu/weights/safetensors.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/models/match/match_test_util.h"

namespace recon::gpu {
namespace {

using testing::GpuTest;
using testing::HostMap;

const std::string kGoldenDir = std::string(RECON_GOLDEN_DIR) + "/match";

Tensor upload(Runtime& rt, const HostMap& m) {
  auto t = Tensor::from_host(rt, DType::kF32, {m.h, m.w, m.d}, m.v.data(), m.v.size() * sizeof(float));
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return std::move(t).value();
}

// A result's rows as (a, b) pairs, checking that xy agrees with the indices.
void expect_consistent(const HostMatches& h, const MatchShape& s) {
  ASSERT_EQ(h.idx_b.size(), h.size());
  ASSERT_EQ(h.xy_a.size(), 2 * h.size());
  ASSERT_EQ(h.xy_b.size(), 2 * h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    EXPECT_EQ(h.xy_a[2 * i], h.idx_a[i] % s.w_a);
    EXPECT_EQ(h.xy_a[2 * i + 1], h.idx_a[i] / s.w_a);
    EXPECT_EQ(h.xy_b[2 * i], h.idx_b[i] % s.w_b);
    EXPECT_EQ(h.xy_b[2 * i + 1], h.idx_b[i] / s.w_b);
  }
}

class FastMatch : public GpuTest {
 protected:
  HostMatches run_fast(const HostMap& a, const HostMap& b, const FastMatchOptions& o, const MatchMaps& maps = {}) {
    Tensor ta = upload(rt(), a), tb = upload(rt(), b);
    auto r = match_fast_reciprocal(rt(), ta, tb, o, maps);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    if (!r.is_ok()) return {};
    auto h = r->to_host(rt());
    EXPECT_TRUE(h.is_ok()) << h.status().to_string();
    if (!h.is_ok()) return {};
    expect_consistent(*h, MatchShape{a.h, a.w, b.h, b.w, a.d});
    return std::move(h).value();
  }
};

struct Golden {
  HostMap a, b;
  FastMatchOptions options;
  std::vector<int32_t> idx_a, idx_b, xy_a, xy_b, active;
};

Golden load_golden(const std::string& name) {
  Golden g;
  auto f = SafetensorsFile::open(kGoldenDir + "/" + name + ".safetensors");
  EXPECT_TRUE(f.is_ok()) << f.status().to_string();
  if (!f.is_ok()) return g;
  auto map = [&](const char* key, HostMap& m) {
    const TensorInfo* info = f->find(key);
    ASSERT_NE(info, nullptr) << key;
    ASSERT_EQ(info->shape.size(), 3u);
    m.h = info->shape[0];
    m.w = info->shape[1];
    m.d = info->shape[2];
    auto v = f->read_f32(key);
    ASSERT_TRUE(v.is_ok());
    m.v = std::move(v).value();
  };
  auto ints = [&](const char* key, std::vector<int32_t>& out) {
    auto bytes = f->bytes(key);
    ASSERT_TRUE(bytes.is_ok()) << key;
    ASSERT_EQ(f->find(key)->dtype, Dtype::kI32) << key;
    out.resize(bytes->size() / 4);
    std::memcpy(out.data(), bytes->data(), bytes->size());
  };
  map("desc_a", g.a);
  map("desc_b", g.b);
  ints("idx_a", g.idx_a);
  ints("idx_b", g.idx_b);
  ints("xy_a", g.xy_a);
  ints("xy_b", g.xy_b);
  ints("active", g.active);
  g.options.subsample = std::stoi(std::string(f->metadata("match.subsample").value_or("0")));
  g.options.max_iter = std::stoi(std::string(f->metadata("match.max_iter").value_or("0")));
  g.options.border = std::stoi(std::string(f->metadata("match.border").value_or("0")));
  return g;
}

class FastMatchGolden : public FastMatch, public ::testing::WithParamInterface<std::string> {};

TEST_P(FastMatchGolden, ReproducesTheReferenceMatchSetExactly) {
  const Golden g = load_golden(GetParam());
  ASSERT_GT(g.a.n(), 0);
  ASSERT_GT(g.idx_a.size(), 0u);
  // Several kernel geometries: the device default, one workgroup, odd grids; every queries-per-
  // invocation count on one case (each is another pipeline, slow to build on lavapipe).
  std::vector<MatchTuning> tunings = {{}, {1, 0}, {7, 0}};
  if (GetParam() == "shifted_s4") {
    // {grid, queries per invocation, batch, pair, fixed, workgroup, tail grid, update grid, dedup}
    tunings.insert(tunings.end(), {{3, 1},
                                   {5, 2},
                                   {64, 4},
                                   {0, 8},
                                   {0, 0, 0, 2, 1},
                                   {0, 0, 0, 1, 2},
                                   {9, 0, 0, 2, 2},
                                   {0, 0, 0, 4, 1},
                                   {7, 2, 0, 8, 1},
                                   {5, 8, 0, 4, 2},
                                   {0, 0, 0, 0, 0, 0, 2, 3},
                                   {0, 0, 0, 0, 0, 0, 0, 0, 1}});
  }
  // The distinct query pixels of each step: what the de-duplicated matcher searches.
  const std::vector<int32_t> searches =
      testing::fast_ref(g.a, g.b, g.options.subsample, g.options.max_iter, g.options.border).searches;
  for (const MatchTuning& t : tunings) {
    FastMatchOptions o = g.options;
    o.tuning = t;
    SCOPED_TRACE("grid " + std::to_string(t.grid) + ", queries/thread " + std::to_string(t.queries_per_thread) +
                 ", pair " + std::to_string(t.pair) + ", fixed " + std::to_string(t.fixed) + ", tail grid " +
                 std::to_string(t.tail_grid) + ", update grid " + std::to_string(t.update_grid) + ", dedup " +
                 std::to_string(t.dedup));
    const HostMatches h = run_fast(g.a, g.b, o);
    EXPECT_EQ(h.idx_a, g.idx_a);
    EXPECT_EQ(h.idx_b, g.idx_b);
    EXPECT_EQ(h.xy_a, g.xy_a);
    EXPECT_EQ(h.xy_b, g.xy_b);
    EXPECT_EQ(h.active_per_step, g.active);
    if (t.dedup == 1) {
      EXPECT_EQ(h.queries_per_step, std::vector<int32_t>(g.active.begin(), g.active.end() - 1));
    } else {
      EXPECT_EQ(h.queries_per_step, searches);
    }
    // The score is the pair's dot product.
    for (size_t i = 0; i < h.size(); ++i) {
      EXPECT_NEAR(h.score[i], testing::dot(g.a.px(h.idx_a[i]), g.b.px(h.idx_b[i]), g.a.d), 1e-5);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, FastMatchGolden, ::testing::Values("shifted", "shifted_s4", "random", "odd_dim"),
                         [](const auto& info) { return info.param; });

TEST_F(FastMatch, MatchesTheCpuReferenceOnRandomMaps) {
  struct Case {
    int64_t ha, wa, hb, wb, d;
    int subsample, max_iter, border;
  };
  for (const Case& c : {Case{37, 41, 33, 45, 24, 8, 10, 3}, Case{30, 26, 21, 35, 64, 3, 10, 1},
                        Case{19, 23, 25, 17, 14, 2, 4, 0}, Case{16, 16, 16, 16, 3, 1, 10, 2}}) {
    // Maps whose queried nearest neighbours have no near-tie, so that fp32 and float64 agree.
    HostMap a, b;
    testing::RefMatches want;
    for (uint32_t seed = 100;; ++seed) {
      a = testing::random_unit_map(c.ha, c.wa, c.d, seed);
      b = testing::random_unit_map(c.hb, c.wb, c.d, seed + 1000);
      want = testing::fast_ref(a, b, c.subsample, c.max_iter, c.border);
      if (want.min_gap > 2e-5) break;
    }
    FastMatchOptions o;
    o.subsample = c.subsample;
    o.max_iter = c.max_iter;
    o.border = c.border;
    SCOPED_TRACE("D " + std::to_string(c.d) + ", S " + std::to_string(c.subsample));
    const HostMatches h = run_fast(a, b, o);
    EXPECT_EQ(h.idx_a, want.idx_a);
    EXPECT_EQ(h.idx_b, want.idx_b);
    EXPECT_EQ(h.active_per_step, want.active);
    EXPECT_EQ(h.queries_per_step, want.searches);
  }
}

TEST_F(FastMatch, TensorCoreSearchGivesTheReferenceMatches) {
  // Split products score within ~1e-6 of float64: maps whose searches have no near-tie give the
  // reference's pairs exactly. The maps are not whole chunks or tiles (masked pixels).
  MatchTuning split;
  split.tensor = 2;
  if (!match_detail::nn_geometry(rt().caps(), 24, 1, split).tensor) GTEST_SKIP() << "no tensor-core search here";
  struct Case {
    int64_t ha, wa, hb, wb, d;
  };
  for (const Case& c : {Case{37, 41, 33, 45, 24}, Case{50, 61, 47, 59, 32}, Case{29, 31, 27, 33, 8}}) {
    HostMap a, b;
    testing::RefMatches want;
    for (uint32_t seed = 300;; ++seed) {
      a = testing::random_unit_map(c.ha, c.wa, c.d, seed);
      b = testing::random_unit_map(c.hb, c.wb, c.d, seed + 1000);
      want = testing::fast_ref(a, b, 4, 10, 0);
      if (want.min_gap > 2e-5) break;
    }
    FastMatchOptions o;
    o.subsample = 4;
    o.border = 0;
    o.tuning = split;
    SCOPED_TRACE("D " + std::to_string(c.d));
    const HostMatches h = run_fast(a, b, o);
    EXPECT_EQ(h.idx_a, want.idx_a);
    EXPECT_EQ(h.idx_b, want.idx_b);
    EXPECT_EQ(h.active_per_step, want.active);
  }
}

TEST_F(FastMatch, ExactTiesGoToTheLowestPixelIndex) {
  // D = 1 (every descriptor ±1 or 0) and quantised D = 4: most scores tie exactly.
  for (int64_t d : {1, 4}) {
    const HostMap a = testing::quantised_map(23, 19, d, 7), b = testing::quantised_map(17, 29, d, 8);
    const auto want = testing::fast_ref(a, b, 2, 10, 0);
    FastMatchOptions o;
    o.subsample = 2;
    o.border = 0;
    MatchTuning no_dedup;
    no_dedup.dedup = 1;
    MatchTuning tensor;  // where the device has it: equal inputs score equally on tensor cores too
    tensor.tensor = 2;
    // Four pixels per loop turn: ties inside one turn too.
    for (const MatchTuning& t : {MatchTuning{}, MatchTuning{5, 0}, MatchTuning{0, 0, 0, 4}, no_dedup, tensor}) {
      o.tuning = t;
      const HostMatches h = run_fast(a, b, o);
      EXPECT_EQ(h.idx_a, want.idx_a) << "D " << d;
      EXPECT_EQ(h.idx_b, want.idx_b) << "D " << d;
      EXPECT_EQ(h.active_per_step, want.active) << "D " << d;
    }
  }
}

TEST_F(FastMatch, SeedsWhoseWalksMeetShareOneSearch) {
  // Constant 4 × 4 regions (quantised, exact ties): at S = 2 the four seeds of a region reach the
  // same pixels from step b on. The de-duplicated matcher searches each distinct pixel once and
  // must give the reference's pairs and counts; without it, once per active seed.
  for (int64_t d : {4, 24}) {
    const HostMap a = testing::blocky_map(28, 36, d, 4, 61), b = testing::blocky_map(32, 24, d, 4, 62);
    const auto want = testing::fast_ref(a, b, 2, 10, 0);
    int64_t active = 0, distinct = 0;
    for (size_t k = 0; k < want.searches.size(); ++k) {
      active += want.active[k];
      distinct += want.searches[k];
    }
    ASSERT_LT(2 * distinct, active) << "the maps must make seeds meet";
    FastMatchOptions o;
    o.subsample = 2;
    o.border = 0;
    for (int dedup : {0, 1}) {
      o.tuning.dedup = dedup;
      SCOPED_TRACE("D " + std::to_string(d) + ", dedup " + std::to_string(dedup));
      const HostMatches h = run_fast(a, b, o);
      ASSERT_GT(h.size(), 0u);
      EXPECT_EQ(h.idx_a, want.idx_a);
      EXPECT_EQ(h.idx_b, want.idx_b);
      EXPECT_EQ(h.active_per_step, want.active);
      EXPECT_EQ(h.queries_per_step,
                dedup == 1 ? std::vector<int32_t>(want.active.begin(), want.active.end() - 1) : want.searches);
    }
  }
}

TEST_F(FastMatch, DeduplicationIsOffWhenItsTablesExceedOneBinding) {
  // Two 3000 × 3000 maps of D = 1 fit a binding each (12 bytes per pixel are checked), but their
  // per-pixel tables (8 bytes per pixel of both maps) do not on lavapipe: the matcher searches
  // per seed instead. Built only; running it would scan 9 Mpx per step on the CPU.
  const int64_t side = 3000;
  const bool fits = 8 * 2 * side * side <= static_cast<int64_t>(rt().caps().max_storage_buffer_range);
  FastMatchOptions o;
  o.subsample = 1000;
  auto big = FastMatcher::create(rt(), MatchShape{side, side, side, side, 1}, o);
  ASSERT_TRUE(big.is_ok()) << big.status().to_string();
  EXPECT_EQ((*big)->result().dedup, fits);
  auto small = FastMatcher::create(rt(), MatchShape{30, 30, 30, 30, 1});
  ASSERT_TRUE(small.is_ok()) << small.status().to_string();
  EXPECT_TRUE((*small)->result().dedup);
}

TEST_F(FastMatch, LargerMapsUseManySlicesAndStillMatchTheReference) {
  // 96 × 128 against 88 × 120 at S = 4: 768 seeds, database slices and query blocks at once.
  const HostMap a = testing::random_unit_map(96, 128, 24, 501), b = testing::random_unit_map(88, 120, 24, 502);
  const auto want = testing::fast_ref(a, b, 4, 10, 3);
  FastMatchOptions o;
  o.subsample = 4;
  const auto t0 = std::chrono::steady_clock::now();
  const HostMatches h = run_fast(a, b, o);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("fast matching 96x128 / 88x120, D 24, 768 seeds: %.1f ms (incl. graph build), %zu matches\n", ms,
              h.size());
  // fp32 and float64 agree when no queried NN is near a tie (else change the seeds).
  ASSERT_GT(want.min_gap, 2e-5);
  EXPECT_EQ(h.active_per_step, want.active);
  EXPECT_EQ(h.idx_a, want.idx_a);
  EXPECT_EQ(h.idx_b, want.idx_b);
}

TEST_F(FastMatch, GathersPointsAndConfidences) {
  const HostMap a = testing::random_unit_map(20, 24, 24, 31), b = testing::random_unit_map(22, 18, 24, 32);
  auto pts_a = testing::random_floats(20 * 24 * 3, 33), pts_b = testing::random_floats(22 * 18 * 3, 34);
  auto conf_a = testing::random_floats(20 * 24, 35, 1.0f, 5.0f),
       conf_b = testing::random_floats(22 * 18, 36, 1.0f, 5.0f);
  MatchMaps maps;
  maps.pts3d_a = testing::upload_f32(rt(), DType::kF32, {1, 20, 24, 3}, pts_a);
  maps.pts3d_b = testing::upload_f32(rt(), DType::kF32, {22, 18, 3}, pts_b);
  maps.conf_a = testing::upload_f32(rt(), DType::kF32, {20, 24}, conf_a);
  maps.conf_b = testing::upload_f32(rt(), DType::kF32, {1, 22, 18}, conf_b);
  FastMatchOptions o;
  o.subsample = 2;
  o.border = 0;
  const HostMatches h = run_fast(a, b, o, maps);
  ASSERT_GT(h.size(), 0u);
  ASSERT_EQ(h.pts3d_a.size(), 3 * h.size());
  ASSERT_EQ(h.conf.size(), h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(h.pts3d_a[3 * i + c], pts_a[static_cast<size_t>(h.idx_a[i]) * 3 + c]);
      EXPECT_EQ(h.pts3d_b[3 * i + c], pts_b[static_cast<size_t>(h.idx_b[i]) * 3 + c]);
    }
    const float ca = conf_a[static_cast<size_t>(h.idx_a[i])], cb = conf_b[static_cast<size_t>(h.idx_b[i])];
    EXPECT_EQ(h.conf_a[i], ca);
    EXPECT_EQ(h.conf_b[i], cb);
    EXPECT_NEAR(h.conf[i], std::sqrt(double(ca) * cb), 1e-6 * std::sqrt(double(ca) * cb));
  }
}

TEST_F(FastMatch, AMatcherReplaysForNewInputs) {
  const HostMap a1 = testing::random_unit_map(24, 32, 24, 41), b1 = testing::random_unit_map(24, 32, 24, 42);
  const HostMap a2 = testing::random_unit_map(24, 32, 24, 43), b2 = testing::random_unit_map(24, 32, 24, 44);
  FastMatchOptions o;
  o.subsample = 4;
  auto m = FastMatcher::create(rt(), MatchShape{24, 32, 24, 32, 24}, o);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ((*m)->seed_count(), 6 * 8);
  const Tensor ta1 = upload(rt(), a1), tb1 = upload(rt(), b1), ta2 = upload(rt(), a2), tb2 = upload(rt(), b2);
  for (int round = 0; round < 2; ++round) {
    for (int pair = 0; pair < 2; ++pair) {
      auto r = pair == 0 ? (*m)->run(ta1, tb1) : (*m)->run(ta2, tb2);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      auto h = r->to_host(rt());
      ASSERT_TRUE(h.is_ok());
      const auto want = pair == 0 ? testing::fast_ref(a1, b1, 4, 10, 3) : testing::fast_ref(a2, b2, 4, 10, 3);
      EXPECT_EQ(h->idx_a, want.idx_a) << "round " << round << " pair " << pair;
      EXPECT_EQ(h->idx_b, want.idx_b) << "round " << round << " pair " << pair;
    }
  }
  EXPECT_EQ((*m)->graph().record_count(), 2u);  // one recording per input binding, then replays
}

TEST_F(FastMatch, MisuseIsInvalidArgument) {
  const HostMap a = testing::random_unit_map(16, 16, 24, 51);
  const Tensor ta = upload(rt(), a);
  auto expect_invalid = [](const Status& s, const char* what) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << what << ": " << s.to_string();
  };
  auto fast = [&](const Tensor& x, const Tensor& y, FastMatchOptions o = {}, const MatchMaps& maps = {}) {
    return match_fast_reciprocal(rt(), x, y, o, maps).status();
  };
  expect_invalid(fast(Tensor(), ta), "undefined");
  expect_invalid(fast(testing::upload_f32(rt(), DType::kF16, {16, 16, 24}, a.v), ta), "f16 descriptors");
  expect_invalid(fast(ta, upload(rt(), testing::random_unit_map(16, 16, 23, 52))), "D differs");
  expect_invalid(
      fast(upload(rt(), testing::random_unit_map(4, 4, 65, 53)), upload(rt(), testing::random_unit_map(4, 4, 65, 54))),
      "D > 64");
  expect_invalid(fast(testing::upload_f32(rt(), DType::kF32, {2, 8, 16, 24}, a.v), ta), "batch of 2");
  expect_invalid(fast(testing::upload_f32(rt(), DType::kF32, {256, 24}, a.v), ta), "rank 2");
  FastMatchOptions o;
  o.subsample = 0;
  expect_invalid(fast(ta, ta, o), "subsample 0");
  o = {};
  o.subsample = 40;
  expect_invalid(fast(ta, ta, o), "no seeds");
  o = {};
  o.max_iter = 0;
  expect_invalid(fast(ta, ta, o), "max_iter 0");
  o.max_iter = kMaxFastMatchIter + 1;
  expect_invalid(fast(ta, ta, o), "max_iter too large");
  o = {};
  o.border = -1;
  expect_invalid(fast(ta, ta, o), "negative border");
  MatchMaps maps;
  maps.pts3d_a = testing::upload_f32(rt(), DType::kF32, {16, 16, 3}, std::vector<float>(768));
  expect_invalid(fast(ta, ta, {}, maps), "one pts3d map");
  maps.pts3d_b = testing::upload_f32(rt(), DType::kF32, {16, 15, 3}, std::vector<float>(720));
  expect_invalid(fast(ta, ta, {}, maps), "pts3d of the wrong size");
  maps = {};
  maps.conf_a = testing::upload_f32(rt(), DType::kF32, {16, 16}, std::vector<float>(256));
  maps.conf_b = testing::upload_f32(rt(), DType::kF32, {16, 16, 1}, std::vector<float>(256));
  expect_invalid(fast(ta, ta, {}, maps), "conf with a channel axis");
  expect_invalid(FastMatcher::create(rt(), MatchShape{0, 16, 16, 16, 24}).status(), "empty shape");
  auto m = FastMatcher::create(rt(), MatchShape{16, 16, 16, 16, 24});
  ASSERT_TRUE(m.is_ok());
  expect_invalid((*m)->run(ta, upload(rt(), testing::random_unit_map(16, 17, 24, 55))).status(), "other shape");
  MatchMaps extra;
  extra.conf_a = testing::upload_f32(rt(), DType::kF32, {16, 16}, std::vector<float>(256));
  extra.conf_b = extra.conf_a;
  expect_invalid((*m)->run(ta, ta, extra).status(), "maps the matcher was not built for");
  EXPECT_TRUE((*m)->run(ta, ta).is_ok());
}

}  // namespace
}  // namespace recon::gpu
