// LayerNorm against a float64 reference on the stored inputs: ragged row lengths, optional affine
// parameters, and rows with a large offset and a small spread (the case a naive E[x²] − E[x]² fails).
#include "gpu/ops/layer_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "gpu/ops/wide_access.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

// max |got − want| / max(|want|, 1): LayerNorm outputs are O(1).
double max_error(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    worst = std::max(worst, std::abs(got[i] - want[i]) / std::max(std::abs(want[i]), 1.0));
  }
  return worst;
}

std::vector<double> reference(const std::vector<float>& x, int64_t cols, const std::vector<float>* w,
                              const std::vector<float>* b, double eps) {
  std::vector<double> out(x.size());
  for (size_t r = 0; r < x.size() / cols; ++r) {
    const float* row = &x[r * cols];
    double mean = 0, var = 0;
    for (int64_t i = 0; i < cols; ++i) mean += row[i];
    mean /= cols;
    for (int64_t i = 0; i < cols; ++i) var += (row[i] - mean) * (row[i] - mean);
    var /= cols;
    for (int64_t i = 0; i < cols; ++i) {
      double v = (row[i] - mean) / std::sqrt(var + eps);
      if (w) v *= (*w)[i];
      if (b) v += (*b)[i];
      out[r * cols + i] = v;
    }
  }
  return out;
}

class LayerNormTest : public GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(LayerNormTest, MatchesFloat64OnRaggedShapesWithAndWithoutAffine) {
  const DType d = GetParam();
  struct Case {
    Shape shape;
    bool weight, bias;
  };
  uint32_t seed = 10;
  for (const Case& c : {Case{{3, 5, 77}, true, true}, Case{{2, 1030}, true, true}, Case{{4, 1}, true, true},
                        Case{{7, 33}, false, false}, Case{{1, 768}, true, false}, Case{{300, 24}, false, true}}) {
    const int64_t cols = c.shape.back();
    const int64_t n = shape_numel(c.shape);
    Tensor x = upload_f32(rt(), d, c.shape, random_floats(n, ++seed, -2.0f, 3.0f));
    Tensor w = upload_f32(rt(), d, {cols}, random_floats(cols, ++seed, 0.5f, 1.5f));
    Tensor b = upload_f32(rt(), d, {cols}, random_floats(cols, ++seed, -1.0f, 1.0f));
    Tensor out = poisoned(rt(), d, c.shape);
    Graph g(rt());
    ASSERT_TRUE(ops::layer_norm(g, x, c.weight ? std::optional<Arg>(w) : std::nullopt,
                                c.bias ? std::optional<Arg>(b) : std::nullopt, out, 1e-6f)
                    .is_ok());
    ASSERT_TRUE(g.run().is_ok());
    auto sx = download_f32(rt(), x), sw = download_f32(rt(), w), sb = download_f32(rt(), b);
    auto want = reference(sx, cols, c.weight ? &sw : nullptr, c.bias ? &sb : nullptr, 1e-6);
    EXPECT_LE(max_error(download_f32(rt(), out), want), d == DType::kF32 ? 1e-5 : 4e-3) << shape_string(c.shape);
  }
}

// Rows of whole 16-byte words take the wide path (row held in registers, 1 to 8 words per
// invocation), the rest the general one; both against float64, with and without the affine part.
TEST_P(LayerNormTest, WideAndGeneralPathsMatchFloat64) {
  const DType d = GetParam();
  const int64_t per_word = ops::elements_per_word(d);
  uint32_t seed = 500;
  // 1, 3, 64 or 32, 48 or 24, 257, 2048 words; 2049 words (over 8 per invocation); not whole words.
  const int64_t cols_list[] = {per_word,        3 * per_word,    1024,     768,         257 * per_word,
                               2048 * per_word, 2049 * per_word, 1024 + 2, per_word - 1};
  for (int64_t cols : cols_list) {
    const Shape shape{5, cols};
    const ops::RowSchedule sched = ops::row_schedule(cols, d);
    for (bool affine : {true, false}) {
      Tensor x = upload_f32(rt(), d, shape, random_floats(5 * cols, ++seed, -2.0f, 3.0f));
      Tensor w = upload_f32(rt(), d, {cols}, random_floats(cols, ++seed, 0.5f, 1.5f));
      Tensor b = upload_f32(rt(), d, {cols}, random_floats(cols, ++seed, -1.0f, 1.0f));
      Tensor out = poisoned(rt(), d, shape);
      Graph g(rt());
      ASSERT_TRUE(ops::layer_norm(g, x, affine ? std::optional<Arg>(w) : std::nullopt,
                                  affine ? std::optional<Arg>(b) : std::nullopt, out, 1e-6f)
                      .is_ok());
      ASSERT_TRUE(g.run().is_ok());
      auto sx = download_f32(rt(), x), sw = download_f32(rt(), w), sb = download_f32(rt(), b);
      auto want = reference(sx, cols, affine ? &sw : nullptr, affine ? &sb : nullptr, 1e-6);
      EXPECT_LE(max_error(download_f32(rt(), out), want), d == DType::kF32 ? 1e-5 : 4e-3)
          << cols << " cols, wide " << sched.wide << ", words " << sched.words << ", wg " << sched.wg;
    }
  }
}

TEST_P(LayerNormTest, KeepsPrecisionOnLargeOffsetSmallSpreadRows) {
  const DType d = GetParam();
  // fp32: mean 100, std ~0.01 (E[x²] − E[x]² would cancel 8 digits). fp16 cannot hold a 0.01 spread
  // at 100 (its spacing there is 0.0625), so it gets mean 100 with a spread of ~2.
  const float spread = d == DType::kF32 ? 0.02f : 4.0f;
  const Shape shape{6, 1024};
  std::vector<float> v = random_floats(6 * 1024, 77, 100.0f - spread, 100.0f + spread);
  Tensor x = upload_f32(rt(), d, shape, v);
  Tensor out = poisoned(rt(), d, shape);
  Graph g(rt());
  ASSERT_TRUE(ops::layer_norm(g, x, std::nullopt, std::nullopt, out, 1e-6f).is_ok());
  ASSERT_TRUE(g.run().is_ok());
  auto want = reference(download_f32(rt(), x), 1024, nullptr, nullptr, 1e-6);
  EXPECT_LE(max_error(download_f32(rt(), out), want), d == DType::kF32 ? 1e-5 : 4e-3);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LayerNormTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

// The schedule the row kernels (layer_norm, rms_norm, l2_normalize, softmax) share: whole-word rows
// up to 8 words per invocation go wide with about two words each (at least 64 invocations from 64
// words on); the rest take the general path.
TEST(RowScheduleTest, PicksWideWordsForWholeWordRowsUpToEightWordsPerInvocation) {
  auto is = [](ops::RowSchedule s, uint32_t wg, uint32_t words, uint32_t wide) {
    return s.wg == wg && s.words == words && s.wide == wide;
  };
  EXPECT_TRUE(is(ops::row_schedule(1024, DType::kF32), 128, 2, 1));  // MASt3R encoder
  EXPECT_TRUE(is(ops::row_schedule(1024, DType::kF16), 64, 2, 1));
  EXPECT_TRUE(is(ops::row_schedule(768, DType::kF32), 128, 2, 1));  // decoder, attention rows
  EXPECT_TRUE(is(ops::row_schedule(768, DType::kF16), 64, 2, 1));
  EXPECT_TRUE(is(ops::row_schedule(480, DType::kF16), 32, 2, 1));  // 60 words
  EXPECT_TRUE(is(ops::row_schedule(24, DType::kF32), 32, 1, 1));   // descriptors
  EXPECT_TRUE(is(ops::row_schedule(8192, DType::kF32), 256, 8, 1));
  EXPECT_TRUE(is(ops::row_schedule(8196, DType::kF32), 256, 1, 0));  // 2049 words: over 8 each
  EXPECT_TRUE(is(ops::row_schedule(1030, DType::kF32), 256, 1, 0));  // not whole words
  EXPECT_TRUE(is(ops::row_schedule(20, DType::kF16), 32, 1, 0));
  EXPECT_TRUE(is(ops::row_schedule(3, DType::kF32), 32, 1, 0));
}

// Push constants of shaders/layer_norm.comp (flags 3: weight and bias), for the tests that
// dispatch it directly with a schedule of their own.
struct LayerNormPush {  // mirrors Push in shaders/layer_norm.comp
  uint32_t rows, cols, flags;
  float eps;
};
static_assert(sizeof(LayerNormPush) == 16);

// Opt-in (RECON_NORM_BENCH=1, for the GPU machine): the row kernels (layer_norm and softmax; wide
// paths) under every schedule row_schedule, layer_norm_loop_groups and softmax_schedule could pick,
// at the model's shapes and at 256 MiB, in GB/s (x read once, y written once).
class RowKernelBench : public GpuTest {};

TEST_F(RowKernelBench, ScheduleSweep) {
  if (std::getenv("RECON_NORM_BENCH") == nullptr) GTEST_SKIP() << "set RECON_NORM_BENCH=1 to run";
  struct Case {
    const char* name;
    int64_t rows, cols;
  };
  // How the rows map to workgroups: one each, looping over the rows (LayerNorm), one per subgroup (softmax).
  enum class Mapping { kRowPerGroup, kLoop, kRowPerSubgroup };
  const uint32_t sg = rt().caps().subgroup_size;
  const uint32_t loop_groups = ops::kLayerNormLoopGroupsPerSm * rt().caps().shader_core_count;
  for (const Case c : {Case{"encoder, batch 8", 24576, 1024}, Case{"decoder, batch 8", 12288, 768},
                       Case{"65536 x 1024", 65536, 1024}, Case{"scores 24576 x 768", 24576, 768}}) {
    for (const DType d : {DType::kF32, DType::kF16}) {
      const int64_t nw = c.cols / ops::elements_per_word(d);
      Tensor x = upload_f32(rt(), d, {c.rows, c.cols}, random_floats(c.rows * c.cols, 1, -2.0f, 3.0f));
      Tensor w = upload_f32(rt(), d, {c.cols}, random_floats(c.cols, 2, 0.5f, 1.5f));
      Tensor y = Tensor::empty(rt(), d, {c.rows, c.cols}).value();
      const double bytes = 2.0 * static_cast<double>(x.bytes());
      const ops::RowSchedule chosen_norm = ops::row_schedule(c.cols, d);
      const bool chosen_loop = ops::layer_norm_loop_groups(rt().caps(), chosen_norm, c.rows) > 0;
      const ops::RowSchedule chosen_softmax = ops::softmax_schedule(c.cols, d, ops::fixed_subgroup_size(rt().caps()));
      const std::string suffix = d == DType::kF32 ? "_f32" : "_f16";
      for (const bool norm : {true, false}) {
        for (const uint32_t wg : {32u, 64u, 128u, 256u}) {
          for (const Mapping mapping : {Mapping::kRowPerGroup, Mapping::kLoop, Mapping::kRowPerSubgroup}) {
            if (mapping == Mapping::kLoop && (!norm || loop_groups == 0)) continue;
            if (mapping == Mapping::kRowPerSubgroup && (norm || wg < 2 * sg)) continue;
            const uint32_t lanes = mapping == Mapping::kRowPerSubgroup ? sg : wg;
            const uint32_t words = static_cast<uint32_t>((nw + lanes - 1) / lanes);
            if (words > ops::kMaxRowWords) continue;
            const uint32_t wide = mapping == Mapping::kRowPerSubgroup ? 2u : 1u;
            const uint64_t groups = mapping == Mapping::kRowPerSubgroup
                                        ? ops::RowSchedule{wg, words, 2, wg / sg}.groups(c.rows)
                                    : mapping == Mapping::kLoop ? loop_groups
                                                                : c.rows;
            const LayerNormPush push{static_cast<uint32_t>(c.rows), static_cast<uint32_t>(c.cols), 3u,
                                     1e-6f};  // softmax reads the first two words
            const uint32_t spec[] = {wg, words, wide, mapping == Mapping::kLoop ? 1u : 0u};
            const std::string shader = (norm ? "layer_norm" : "softmax") + suffix;
            const auto grid = Graph::grid_1d(groups);
            Graph g(rt());
            constexpr int kReps = 20;
            for (int i = 0; i < kReps; ++i) {
              ASSERT_TRUE(
                  norm ? g.dispatch(shader, spec,
                                    {{x, Access::kRead}, {w, Access::kRead}, {w, Access::kRead}, {y, Access::kWrite}},
                                    push, grid)
                             .is_ok()
                       : g.dispatch(shader, spec, {{x, Access::kRead}, {y, Access::kWrite}}, push, grid).is_ok());
            }
            const double sec = seconds_per_dispatch(g, kReps, 20);
            const ops::RowSchedule& chosen = norm ? chosen_norm : chosen_softmax;
            const bool is_chosen = wg == chosen.wg && words == chosen.words && wide == chosen.wide &&
                                   (!norm || chosen_loop == (mapping == Mapping::kLoop));
            const char* how = mapping == Mapping::kLoop ? "rows looped  "
                              : wide == 2               ? "row/subgroup "
                                                        : "row/workgroup";
            std::printf("[rows] %-10s %-19s %s wg %3u words %u %s%s %8.2f us %6.0f GB/s\n",
                        norm ? "layer_norm" : "softmax", c.name, dtype_name(d), wg, words, how,
                        is_chosen ? " (chosen)" : "         ", sec * 1e6, bytes / sec * 1e-9);
          }
        }
      }
    }
  }
}

// Workgroups that loop over the rows (chosen for many rows where the SM count is known, so never
// on lavapipe: dispatched directly here, 3 workgroups over 37 rows) against float64.
TEST_P(LayerNormTest, WorkgroupsLoopingOverTheRowsMatchFloat64) {
  const DType d = GetParam();
  const int64_t rows = 37, cols = 1024;
  const ops::RowSchedule sched = ops::row_schedule(cols, d);
  ASSERT_EQ(sched.wide, 1u);
  uint32_t seed = 900;
  for (bool affine : {true, false}) {
    Tensor x = upload_f32(rt(), d, {rows, cols}, random_floats(rows * cols, ++seed, -2.0f, 3.0f));
    Tensor w = upload_f32(rt(), d, {cols}, random_floats(cols, ++seed, 0.5f, 1.5f));
    Tensor b = upload_f32(rt(), d, {cols}, random_floats(cols, ++seed, -1.0f, 1.0f));
    Tensor out = poisoned(rt(), d, {rows, cols});
    const LayerNormPush push{static_cast<uint32_t>(rows), static_cast<uint32_t>(cols), affine ? 3u : 0u, 1e-6f};
    const uint32_t spec[] = {sched.wg, sched.words, 1, 1};
    Graph g(rt());
    ASSERT_TRUE(g.dispatch(d == DType::kF32 ? "layer_norm_f32" : "layer_norm_f16", spec,
                           {{x, Access::kRead}, {w, Access::kRead}, {b, Access::kRead}, {out, Access::kWrite}}, push,
                           {3, 1, 1})
                    .is_ok());
    ASSERT_TRUE(g.run().is_ok());
    auto sx = download_f32(rt(), x), sw = download_f32(rt(), w), sb = download_f32(rt(), b);
    auto want = reference(sx, cols, affine ? &sw : nullptr, affine ? &sb : nullptr, 1e-6);
    EXPECT_LE(max_error(download_f32(rt(), out), want), d == DType::kF32 ? 1e-5 : 4e-3) << "affine " << affine;
  }
}

// The looping rule: 32 workgroups per SM, from 12 rows per workgroup, where the SM count is known.
TEST(LayerNormLoopTest, LoopsOnlyOverManyRowsWhereTheSmCountIsKnown) {
  Capabilities caps;
  caps.shader_core_count = 132;
  const ops::RowSchedule wide = ops::row_schedule(1024, DType::kF16);
  EXPECT_EQ(ops::layer_norm_loop_groups(caps, wide, 65536), 4224u);
  EXPECT_EQ(ops::layer_norm_loop_groups(caps, wide, 24576), 0u) << "the encoder at batch 8: 5.8 rows per workgroup";
  EXPECT_EQ(ops::layer_norm_loop_groups(caps, ops::row_schedule(1030, DType::kF16), 65536), 0u) << "general path";
  caps.shader_core_count = 0;
  EXPECT_EQ(ops::layer_norm_loop_groups(caps, wide, 65536), 0u);
}

class LayerNormMisuseTest : public GpuTest {};

TEST_F(LayerNormMisuseTest, RefusesWrongShapesDtypesAndEps) {
  Tensor x = Tensor::empty(rt(), DType::kF32, {4, 8}).value();
  Tensor out = Tensor::empty(rt(), DType::kF32, {4, 8}).value();
  Tensor out_h = Tensor::empty(rt(), DType::kF16, {4, 8}).value();
  Tensor w7 = Tensor::empty(rt(), DType::kF32, {7}).value();
  Tensor w8h = Tensor::empty(rt(), DType::kF16, {8}).value();
  Tensor xi = Tensor::empty(rt(), DType::kI32, {4, 8}).value();
  Graph g(rt());
  const auto code = [](Status s) { return s.code(); };
  EXPECT_EQ(code(ops::layer_norm(g, x, std::nullopt, std::nullopt, out_h, 1e-6f)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ops::layer_norm(g, x, w7, std::nullopt, out, 1e-6f)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ops::layer_norm(g, x, std::nullopt, w8h, out, 1e-6f)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ops::layer_norm(g, xi, std::nullopt, std::nullopt, xi, 1e-6f)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ops::layer_norm(g, x, std::nullopt, std::nullopt, out, -1.0f)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(ops::layer_norm(g, x, std::nullopt, std::nullopt, out, NAN)), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.dispatch_count(), 0u);
}

}  // namespace
}  // namespace recon::gpu
