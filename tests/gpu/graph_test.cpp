#include "gpu/graph.h"

#include <gtest/gtest.h>

#include <array>

#include "gpu/dispatch_profile.h"
#include "gpu/ops/elementwise_basic.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using testing::download_f32;
using testing::GpuTest;
using testing::random_floats;
using testing::upload_f32;

class GraphTest : public GpuTest {};

TEST_F(GraphTest, ReplaysWithNewBindingsAndReusesRecordings) {
  const Shape shape{3, 37};
  Graph g(rt());
  Arg a = g.add_slot("a", DType::kF32, shape);
  Arg b = g.add_slot("b", DType::kF32, shape);
  Arg out = g.add_slot("out", DType::kF32, shape);
  ASSERT_TRUE(ops::add(g, a, b, out).is_ok());

  struct Set {
    std::vector<float> a, b;
    Tensor ta, tb, tout;
  };
  std::vector<Set> sets(2);
  for (uint32_t i = 0; i < 2; ++i) {
    sets[i].a = random_floats(111, 10 + i);
    sets[i].b = random_floats(111, 20 + i);
    sets[i].ta = upload_f32(rt(), DType::kF32, shape, sets[i].a);
    sets[i].tb = upload_f32(rt(), DType::kF32, shape, sets[i].b);
    sets[i].tout = testing::poisoned(rt(), DType::kF32, shape);
  }
  for (int round = 0; round < 3; ++round) {
    for (auto& s : sets) {
      ASSERT_TRUE(g.bind(a, s.ta).is_ok());
      ASSERT_TRUE(g.bind(b, s.tb).is_ok());
      ASSERT_TRUE(g.bind("out", s.tout).is_ok());
      ASSERT_TRUE(g.run().is_ok());
      auto got = download_f32(rt(), s.tout);
      for (size_t i = 0; i < got.size(); ++i) ASSERT_FLOAT_EQ(got[i], s.a[i] + s.b[i]) << "round " << round;
    }
  }
  EXPECT_EQ(g.record_count(), 2u) << "each binding set is recorded once, then replayed";
}

// Graph::scratch: one buffer per name, as large as the largest request, zeroed when the graph
// allocates it at its first submission and kept between runs; dispatches that write it are ordered.
TEST_F(GraphTest, ScratchIsOneZeroedBufferAsLargeAsTheLargestRequest) {
  Graph g(rt());
  const Arg small = g.scratch("s", DType::kF32, 4);
  EXPECT_EQ(small.shape(), Shape{4});
  EXPECT_EQ(g.scratch_bytes(), 16u);
  const Tensor before = Tensor::empty(rt(), DType::kF32, {4}).value();
  ASSERT_TRUE(ops::copy(g, small, before).is_ok());
  const Arg large = g.scratch("s", DType::kF32, 16);
  EXPECT_EQ(large.shape(), Shape{16});
  EXPECT_EQ(g.scratch_bytes(), 64u) << "one buffer of the larger size";
  ASSERT_TRUE(ops::fill(g, large, 7.0f).is_ok());
  const Arg other = g.scratch("t", DType::kF32, 4);  // another name, another buffer
  ASSERT_TRUE(ops::fill(g, other, 1.0f).is_ok());
  const Tensor after = Tensor::empty(rt(), DType::kF32, {4}).value();
  ASSERT_TRUE(ops::copy(g, small, after).is_ok());
  EXPECT_EQ(g.scratch_bytes(), 80u);
  ASSERT_TRUE(g.run().is_ok());
  EXPECT_EQ(download_f32(rt(), before), std::vector<float>(4, 0.0f)) << "zeroed, read before the fill";
  EXPECT_EQ(download_f32(rt(), after), std::vector<float>(4, 7.0f)) << "the fill of the larger request";
  ASSERT_TRUE(g.run().is_ok());
  EXPECT_EQ(download_f32(rt(), before), std::vector<float>(4, 7.0f)) << "kept from the previous run";
}

TEST_F(GraphTest, UnboundSlotIsAnErrorNotACrash) {
  Graph g(rt());
  Arg out = g.add_slot("out", DType::kF32, {16});
  ASSERT_TRUE(ops::fill(g, out, 1.0f).is_ok());
  Status s = g.run();
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("out"), std::string::npos);
}

TEST_F(GraphTest, BindingTheWrongShapeOrDtypeIsRefused) {
  Graph g(rt());
  Arg out = g.add_slot("out", DType::kF32, {4, 4});
  auto wrong_shape = Tensor::empty(rt(), DType::kF32, {16});
  auto wrong_dtype = Tensor::empty(rt(), DType::kF16, {4, 4});
  EXPECT_EQ(g.bind(out, wrong_shape.value()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.bind(out, wrong_dtype.value()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.bind("missing", wrong_dtype.value()).code(), StatusCode::kNotFound);
}

TEST_F(GraphTest, BarriersOnlyWhereADependencyExists) {
  auto x = Tensor::empty(rt(), DType::kF32, {1024}).value();
  auto y = Tensor::empty(rt(), DType::kF32, {1024}).value();
  auto z = Tensor::empty(rt(), DType::kF32, {1024}).value();
  Graph g(rt());
  ASSERT_TRUE(ops::fill(g, x, 1.0f).is_ok());
  ASSERT_TRUE(ops::fill(g, y, 2.0f).is_ok());  // independent of the first: no barrier
  ASSERT_TRUE(ops::add(g, x, y, z).is_ok());   // reads both: one barrier
  ASSERT_TRUE(ops::fill(g, x, 5.0f).is_ok());  // overwrites what add read: one more barrier
  ASSERT_TRUE(g.run().is_ok());
  EXPECT_EQ(g.barrier_count(), 2u);
  auto got = download_f32(rt(), z);
  for (float v : got) ASSERT_EQ(v, 3.0f);
  for (float v : download_f32(rt(), x)) ASSERT_EQ(v, 5.0f);
}

// Two chains of three dependent steps (a = 1 + i; b = a + a; c = b + a), issued one after the
// other; with `marks`, a timestamp mark opens each chain.
struct TwoChains {
  std::array<Tensor, 2> a, b, c;
  explicit TwoChains(Runtime& rt) {
    for (int i = 0; i < 2; ++i) {
      a[i] = Tensor::empty(rt, DType::kF32, {2048}).value();
      b[i] = Tensor::empty(rt, DType::kF32, {2048}).value();
      c[i] = Tensor::empty(rt, DType::kF32, {2048}).value();
    }
  }
  void record(Graph& g, bool marks) {
    for (int i = 0; i < 2; ++i) {
      if (marks) g.timestamp(i == 0 ? "first" : "second");
      ASSERT_TRUE(ops::fill(g, a[i], 1.0f + static_cast<float>(i)).is_ok());
      ASSERT_TRUE(ops::add(g, a[i], a[i], b[i]).is_ok());
      ASSERT_TRUE(ops::add(g, b[i], a[i], c[i]).is_ok());
    }
  }
  void check(Runtime& rt) {
    for (int i = 0; i < 2; ++i) {
      const float want = 3.0f * (1.0f + static_cast<float>(i));
      for (float v : download_f32(rt, c[i])) ASSERT_EQ(v, want) << "chain " << i;
    }
  }
};

TEST_F(GraphTest, IndependentChainsShareBarriers) {
  // In program order the two chains need four barriers; recorded by dependency level, two
  // (gpu/graph_schedule.h).
  TwoChains chains(rt());
  Graph g(rt());
  ASSERT_NO_FATAL_FAILURE(chains.record(g, /*marks=*/false));
  ASSERT_TRUE(g.run().is_ok());
  EXPECT_EQ(g.barrier_count(), 2u);
  chains.check(rt());
}

TEST_F(GraphTest, TimestampMarksKeepTheirStagesApart) {
  // With a mark between them nothing moves across it: each chain keeps its two barriers, and the
  // second chain touches none of the first one's tensors, so none at the boundary.
  TwoChains chains(rt());
  Graph g(rt());
  ASSERT_NO_FATAL_FAILURE(chains.record(g, /*marks=*/true));
  ASSERT_TRUE(g.run().is_ok());
  EXPECT_EQ(g.barrier_count(), 4u);
  chains.check(rt());
}

TEST_F(GraphTest, ManyReplaysOfOneRecordingStayCorrect) {
  auto acc = Tensor::empty(rt(), DType::kF32, {64}).value();
  auto one = Tensor::empty(rt(), DType::kF32, {64}).value();
  Graph init(rt());
  ASSERT_TRUE(ops::fill(init, acc, 0.0f).is_ok());
  ASSERT_TRUE(ops::fill(init, one, 1.0f).is_ok());
  ASSERT_TRUE(init.run().is_ok());
  Graph step(rt());
  ASSERT_TRUE(ops::add(step, acc, one, acc).is_ok());  // in place: acc += 1
  for (int i = 0; i < 25; ++i) ASSERT_TRUE(step.run().is_ok());
  EXPECT_EQ(step.record_count(), 1u);
  for (float v : download_f32(rt(), acc)) ASSERT_EQ(v, 25.0f);
}

TEST_F(GraphTest, SubmitReturnsIncreasingTimelineValues) {
  auto t = Tensor::empty(rt(), DType::kF32, {8}).value();
  Graph g(rt());
  ASSERT_TRUE(ops::fill(g, t, 1.0f).is_ok());
  auto v1 = g.submit();
  ASSERT_TRUE(v1.is_ok());
  auto v2 = g.submit();
  ASSERT_TRUE(v2.is_ok());
  EXPECT_LT(v1.value(), v2.value());
  EXPECT_TRUE(g.wait(v2.value()).is_ok());
}

TEST_F(GraphTest, OversizedDispatchIsRefused) {
  Graph g(rt());
  auto t = Tensor::empty(rt(), DType::kF32, {8}).value();
  Status s = g.dispatch("fill_f32", {}, {{t, Access::kWrite}}, nullptr, 0, {0, 1, 1});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST_F(GraphTest, TimestampsGiveOneNonNegativeDurationPerMark) {
  auto t = Tensor::empty(rt(), DType::kF32, {4096}).value();
  Graph g(rt());
  g.timestamp("first");
  ASSERT_TRUE(ops::fill(g, t, 1.0f).is_ok());
  g.timestamp("second");
  ASSERT_TRUE(ops::fill(g, t, 2.0f).is_ok());
  ASSERT_TRUE(ops::fill(g, t, 3.0f).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  auto timings = g.timings();
  if (rt().caps().timestamp_period_ns == 0) GTEST_SKIP() << "device has no timestamps";
  ASSERT_EQ(timings.size(), 2u);
  EXPECT_EQ(timings[0].first, "first");
  EXPECT_EQ(timings[1].first, "second");
  EXPECT_GE(timings[0].second, 0.0);
  EXPECT_GE(timings[1].second, 0.0);
}

TEST_F(GraphTest, DispatchProfilingCountsEveryDispatchOfEveryCompletedRun) {
  if (rt().caps().timestamp_period_ns == 0) GTEST_SKIP() << "device has no timestamps";
  const bool was_on = dispatch_profiling_enabled();
  set_dispatch_profiling(true);
  reset_dispatch_profile();
  auto small = Tensor::empty(rt(), DType::kF32, {4096}).value();
  auto large = Tensor::empty(rt(), DType::kF32, {1 << 20}).value();
  {
    Graph g(rt());
    ASSERT_TRUE(ops::fill(g, small, 1.0f).is_ok());
    ASSERT_TRUE(ops::fill(g, large, 2.0f).is_ok());
    ASSERT_TRUE(ops::fill(g, small, 3.0f).is_ok());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(g.run().is_ok());
  }
  set_dispatch_profiling(was_on);
  const auto entries = dispatch_profile();
  const std::string table = format_dispatch_profile(10);
  reset_dispatch_profile();
  // The two fills of `small` share pipeline and grid but differ in their push constants.
  ASSERT_EQ(entries.size(), 3u);
  for (const auto& e : entries) {
    EXPECT_EQ(e.count, 3u) << e.pipeline;
    EXPECT_GE(e.total_ms, 0.0);
    EXPECT_NE(e.pipeline.find("fill"), std::string::npos);
  }
  EXPECT_NE(table.find("fill"), std::string::npos);
}

TEST(GraphGrid, SplitsLargeCountsIntoTwoDimensions) {
  EXPECT_EQ(Graph::grid_1d(10)[0], 10u);
  auto g = Graph::grid_1d(200000);
  EXPECT_EQ(g[0], 65535u);
  EXPECT_GE(uint64_t{g[0]} * g[1], 200000u);
}

}  // namespace
}  // namespace recon::gpu
