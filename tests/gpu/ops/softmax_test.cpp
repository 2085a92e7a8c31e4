// Softmax and log-softmax against a float64 reference on the stored inputs: ragged row lengths (1
// to past the workgroup size) and rows whose values would overflow exp() without the max subtraction.
#include "gpu/ops/softmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gpu/ops/wide_access.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

std::vector<double> reference(const std::vector<float>& x, int64_t cols, bool log = false) {
  std::vector<double> out(x.size());
  for (size_t r = 0; r < x.size() / cols; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t i = 0; i < cols; ++i) m = std::max(m, double(x[r * cols + i]));
    for (int64_t i = 0; i < cols; ++i) s += std::exp(x[r * cols + i] - m);
    for (int64_t i = 0; i < cols; ++i) {
      out[r * cols + i] = log ? (x[r * cols + i] - m) - std::log(s) : std::exp(x[r * cols + i] - m) / s;
    }
  }
  return out;
}

class SoftmaxTest : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(SoftmaxTest, MatchesFloat64OnRaggedRowsAndHugeLogits) {
  const DType d = GetParam();
  struct Case {
    Shape shape;
    float lo, hi;
  };
  uint32_t seed = 700;
  // Logits around +200 overflow exp() in fp32 (and fp16) unless the row max is subtracted.
  // Rows of whole 16-byte words take the wide path (1 to 8 words per invocation), the rest the
  // general one (gpu/ops/wide_access.h).
  for (const Case& c : {Case{{3, 1}, -1, 1}, Case{{2, 3, 7}, -4, 4}, Case{{4, 300}, -8, 8}, Case{{2, 1000}, 190, 210},
                        Case{{1, 2049}, -30, 30}, Case{{5, 1024}, -8, 8}, Case{{3, 768}, -8, 8}, Case{{2, 8192}, -8, 8},
                        Case{{3, 8}, -8, 8}, Case{{3, 16}, 190, 210}, Case{{2, 8200}, -8, 8}, Case{{37, 200}, -8, 8},
                        Case{{5, 256}, 190, 210}, Case{{41, 520}, -8, 8}}) {
    const int64_t cols = c.shape.back(), n = shape_numel(c.shape);
    Tensor x = upload_f32(rt(), d, c.shape, random_floats(n, ++seed, c.lo, c.hi));
    Tensor out = poisoned(rt(), d, c.shape), log_out = poisoned(rt(), d, c.shape);
    Graph g(rt());
    ASSERT_TRUE(ops::softmax(g, x, out).is_ok());
    ASSERT_TRUE(ops::log_softmax(g, x, log_out).is_ok());
    ASSERT_TRUE(g.run().is_ok());
    const std::vector<float> xs = download_f32(rt(), x);
    // Relative to max(|p|, 1e-3): probabilities far below the largest ones only need absolute accuracy.
    EXPECT_LE(max_relative_error(download_f32(rt(), out), reference(xs, cols), 1e-3), d == DType::kF32 ? 1e-5 : 2e-3)
        << shape_string(c.shape);
    // Log-probabilities down to x − max = −60 (the [−30, 30] row; fp16's softmax is 0 there), relative
    // to max(|log p|, 1): fp16 stores about 3 digits of them.
    EXPECT_LE(max_relative_error(download_f32(rt(), log_out), reference(xs, cols, /*log=*/true), 1.0),
              d == DType::kF32 ? 1e-5 : 2e-3)
        << "log_softmax " << shape_string(c.shape);
  }
}

// fp16 rows of 2-4 words per lane go a row per subgroup where the subgroup size is fixed: on
// lavapipe (8 lanes) 200 and 256 columns, on an NVIDIA GPU (32 lanes) 520 to 1024; the cases above
// cover both, with row counts that leave the last workgroup part-filled.
TEST(SoftmaxScheduleTest, FixedSubgroupsTakeFp16RowsOfTwoToFourWordsPerLane) {
  const ops::RowSchedule nvidia = ops::softmax_schedule(1024, DType::kF16, 32);
  EXPECT_EQ(nvidia.wide, 2u);
  EXPECT_EQ(nvidia.words, 4u);
  EXPECT_EQ(nvidia.rows_per_group, 4u);
  EXPECT_EQ(nvidia.groups(24577), 6145u);
  EXPECT_EQ(ops::softmax_schedule(768, DType::kF16, 32).words, 3u);
  EXPECT_EQ(ops::softmax_schedule(512, DType::kF16, 32).wide, 1u) << "two words per lane";
  EXPECT_EQ(ops::softmax_schedule(1032, DType::kF16, 32).wide, 1u) << "five words per lane";
  EXPECT_EQ(ops::softmax_schedule(1024, DType::kF32, 32).wide, 1u) << "fp32 rows lost";
  EXPECT_EQ(ops::softmax_schedule(1024, DType::kF16, 0).wide, 1u) << "subgroup size may vary";
  EXPECT_EQ(ops::softmax_schedule(1020, DType::kF16, 32).wide, 0u) << "not whole words";
  const ops::RowSchedule lavapipe = ops::softmax_schedule(200, DType::kF16, 8);
  EXPECT_EQ(lavapipe.wide, 2u);
  EXPECT_EQ(lavapipe.words, 4u);
  EXPECT_EQ(lavapipe.rows_per_group, 16u);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, SoftmaxTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

class SoftmaxMisuseTest : public GpuTest {};

TEST_F(SoftmaxMisuseTest, RefusesWrongShapesAndDtypes) {
  Tensor x = Tensor::empty(rt(), DType::kF32, {4, 8}).value();
  Tensor out = Tensor::empty(rt(), DType::kF32, {8, 4}).value();
  Tensor xi = Tensor::empty(rt(), DType::kI32, {4, 8}).value();
  Graph g(rt());
  EXPECT_EQ(ops::softmax(g, x, out).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ops::softmax(g, xi, xi).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
