// Accuracy of the fp32 GPU whitening against the official float64 Whitener at the real width
// (D = 1024): y = (x − m)·p with m, p stored in float64, tokens with a large common offset (the
// encoder output is not centred), and a projection whose column scales span 3 decades as a PCA
// whitening's do. Reports the measured error; the bound is the GEMM's fp32 bound (1e-5 of
// Σ|x − m|·|p|, tests/gpu/ops/matmul_test.cpp) plus the one-time rounding of m and p to fp32.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "gpu/models/retrieval/retrieval.h"
#include "gpu/weights/safetensors_writer.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

class RetrievalWhitening : public testing::GpuTest {};

TEST_F(RetrievalWhitening, StaysWithinTheFp32GemmBoundOfTheFloat64PathAtFullWidth) {
  constexpr int64_t d = 1024, n = 96;
  std::mt19937 gen(11);
  std::normal_distribution<double> normal;
  std::vector<double> m(d), p(d * d), scale(d);
  for (int64_t i = 0; i < d; ++i) {
    m[i] = 3.0 * normal(gen);
    scale[i] = std::pow(10.0, -1.0 + 3.0 * double(i) / double(d - 1)) / std::sqrt(double(d));
  }
  for (int64_t i = 0; i < d; ++i) {
    for (int64_t j = 0; j < d; ++j) p[i * d + j] = normal(gen) * scale[j];
  }
  std::vector<float> x(n * d);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < d; ++i) x[t * d + i] = static_cast<float>(m[i] + 0.3 * normal(gen));
  }
  SafetensorsWriter w;
  w.add_metadata(kRetrievalMetadataKey, R"({"dim":1024,"nfeat":96})");
  ASSERT_TRUE(w.add_tensor("prewhiten.m", Dtype::kF64, {1, d}, std::as_bytes(std::span(m))).is_ok());
  ASSERT_TRUE(w.add_tensor("prewhiten.p", Dtype::kF64, {d, d}, std::as_bytes(std::span(p))).is_ok());
  auto file = SafetensorsFile::from_bytes(w.serialize());
  ASSERT_TRUE(file.is_ok());
  auto model = RetrievalModel::from_safetensors(rt(), *file);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  auto out = (*model)->encode(testing::upload_f32(rt(), DType::kF32, {1, n, d}, x));
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  // nfeat = N: the features are every whitened token, reordered by attention.
  const std::vector<float> got = testing::download_f32(rt(), out->features);
  std::vector<int32_t> idx(n);
  ASSERT_TRUE(out->token_index.download(rt(), idx.data(), idx.size() * 4).is_ok());

  double worst_bound = 0, worst_row = 0;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t t = idx[r];
    std::vector<double> y(d, 0.0), bound(d, 0.0);
    for (int64_t i = 0; i < d; ++i) {
      const double c = double(x[t * d + i]) - m[i];
      for (int64_t j = 0; j < d; ++j) {
        y[j] += c * p[i * d + j];
        bound[j] += std::abs(c * p[i * d + j]);
      }
    }
    double row_max = 0, row_err = 0;
    for (int64_t j = 0; j < d; ++j) {
      const double e = std::abs(double(got[r * d + j]) - y[j]);
      worst_bound = std::max(worst_bound, e / bound[j]);
      row_max = std::max(row_max, std::abs(y[j]));
      row_err = std::max(row_err, e);
    }
    worst_row = std::max(worst_row, row_err / row_max);
  }
  std::printf("[ whitening D=1024 ] max |err| / sum|x-m||p| = %.2e, max |err| / max_row|y| = %.2e\n", worst_bound,
              worst_row);
  EXPECT_LE(worst_bound, 1e-5);
  EXPECT_LE(worst_row, 1e-5);
}

}  // namespace
}  // namespace recon::gpu
