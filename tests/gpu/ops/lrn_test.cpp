// Local response normalisation against a float64 loop over ONNX's definition: odd and even sizes,
// windows wider than the channels, 2-D and 4-D inputs.
#include "gpu/ops/lrn.h"

#include <gtest/gtest.h>

#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using namespace testing;  // NOLINT

class LrnTest : public GpuTest, public ::testing::WithParamInterface<DType> {
 protected:
  void check(const Shape& s, const ops::LrnParams& p, uint32_t seed) {
    const DType d = GetParam();
    Tensor in = upload_f32(rt(), d, s, random_floats(shape_numel(s), seed, -2.0f, 2.0f));
    Tensor out = poisoned(rt(), d, s);
    Graph g(rt());
    Status st = ops::lrn(g, in, out, p);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_TRUE(g.run().is_ok());
    const auto x = download_f32(rt(), in);
    int64_t inner = 1;
    for (size_t k = 2; k < s.size(); ++k) inner *= s[k];
    std::vector<double> want(x.size());
    for (int64_t n = 0; n < s[0]; ++n)
      for (int64_t c = 0; c < s[1]; ++c)
        for (int64_t i = 0; i < inner; ++i) {
          double sum = 0;
          for (int64_t k = c - (p.size - 1) / 2; k <= c + p.size / 2; ++k) {
            if (k < 0 || k >= s[1]) continue;
            const double v = x[static_cast<size_t>((n * s[1] + k) * inner + i)];
            sum += v * v;
          }
          const size_t at = static_cast<size_t>((n * s[1] + c) * inner + i);
          want[at] = x[at] / std::pow(double(p.bias) + double(p.alpha) / double(p.size) * sum, double(p.beta));
        }
    EXPECT_LE(max_relative_error(download_f32(rt(), out), want), d == DType::kF32 ? 2e-6 : 1e-3)
        << shape_string(s) << " size " << p.size;
  }
};

TEST_P(LrnTest, MatchesTheDefinition) {
  check({2, 7, 5, 6}, {5, 1e-4f, 0.75f, 1.0f}, 1);
  check({1, 9, 4, 4}, {4, 0.5f, 0.6f, 2.0f}, 2);  // even size: one more channel after than before
  check({3, 3, 10}, {7, 0.3f, 1.5f, 1.0f}, 3);    // a window wider than the channels
  check({5, 16}, {3, 0.02f, 0.75f, 1.0f}, 4);     // [N, C]
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LrnTest, ::testing::Values(DType::kF32, DType::kF16), DtypeParamName());

}  // namespace
}  // namespace recon::gpu
