// ONNX's quantization ops beyond what the node tests reach: QuantizeLinear per channel of a 4-D
// tensor, rounding ties to even and saturating at both ends of int8 and uint8; DequantizeLinear
// per channel; MatMulInteger at the longest exact sum and refused beyond it; in fp32 and fp16
// (every value chosen exact in fp16).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/models/onnx/onnx_engine.h"
#include "gpu/models/onnx/onnx_host.h"
#include "tests/models/onnx/onnx_engine_test_util.h"

namespace recon::gpu::onnx {
namespace {

constexpr DType kPrecisions[] = {DType::kF32, DType::kF16};

HostTensor named(ElemType type, std::vector<int64_t> dims, const std::vector<double>& v, std::string name) {
  HostTensor t = make_tensor(type, std::move(dims), v).value();
  t.name = std::move(name);
  return t;
}

// saturate(round_half_even(x / scale) + zp) as the spec defines it.
int64_t quantized(double x, double scale, int64_t zp, int64_t lo, int64_t hi) {
  const auto q = static_cast<int64_t>(std::nearbyint(static_cast<float>(x) / static_cast<float>(scale))) + zp;
  return std::clamp(q, lo, hi);
}

// x [1, 3, 2, 2] with one scale and zero point per channel (axis 1).
const std::vector<double> kX{2.5, -2.5, 127.5, -1000, 1.25, -1.75, 300, -64, 5, 7, -300, 0.75};
const std::vector<double> kScales{1, 0.5, 2};

TEST_F(OnnxEngineTest, QuantizeLinearPerChannelRoundsTiesToEvenAndSaturates) {
  const std::vector<double> zps{0, 10, -10};
  for (DType precision : kPrecisions) {
    Model m = model_of({node("QuantizeLinear", {"x", "s", "zp"}, {"y"})}, {info("x", ElemType::kFloat, {1, 3, 2, 2})},
                       {info("y", ElemType::kInt8, {1, 3, 2, 2})});
    m.graph.initializers = {named(ElemType::kFloat, {3}, kScales, "s"), named(ElemType::kInt8, {3}, zps, "zp")};
    const std::vector<HostTensor> in{named(ElemType::kFloat, {1, 3, 2, 2}, kX, "x")};
    Result<std::vector<HostTensor>> out = run_model(m, precision, in);
    ASSERT_TRUE(out) << out.status().message();
    std::vector<int64_t> want;
    for (size_t i = 0; i < kX.size(); ++i) {
      want.push_back(quantized(kX[i], kScales[i / 4], static_cast<int64_t>(zps[i / 4]), -128, 127));
    }
    EXPECT_EQ(want, (std::vector<int64_t>{2, -2, 127, -128, 12, 6, 127, -118, -8, -6, -128, -10}));
    EXPECT_EQ(host_int64s((*out)[0]).value(), want) << dtype_name(precision);
  }
}

TEST_F(OnnxEngineTest, QuantizeLinearWithoutZeroPointSaturatesIntoUint8) {
  const std::vector<double> x{-3, 0.5, 1.5, 2.5, 254.5, 255.5, 256, 60000};
  for (DType precision : kPrecisions) {
    Model m = model_of({node("QuantizeLinear", {"x", "s"}, {"y"})}, {info("x", ElemType::kFloat, {8})},
                       {info("y", ElemType::kUint8, {8})});
    m.graph.initializers = {named(ElemType::kFloat, {}, {1}, "s")};
    const std::vector<HostTensor> in{named(ElemType::kFloat, {8}, x, "x")};
    Result<std::vector<HostTensor>> out = run_model(m, precision, in);
    ASSERT_TRUE(out) << out.status().message();
    EXPECT_EQ((*out)[0].type, ElemType::kUint8);
    EXPECT_EQ(host_int64s((*out)[0]).value(), (std::vector<int64_t>{0, 0, 2, 2, 254, 255, 255, 255}))
        << dtype_name(precision);
  }
}

TEST_F(OnnxEngineTest, DequantizeLinearPerChannelOfA4DTensor) {
  const std::vector<double> x{0, 255, 128, 7, 0, 255, 10, 11, 3, 200, 100, 1};
  const std::vector<double> zps{128, 10, 0};
  for (DType precision : kPrecisions) {
    Model m = model_of({node("DequantizeLinear", {"x", "s", "zp"}, {"y"})}, {info("x", ElemType::kUint8, {1, 3, 2, 2})},
                       {info("y", ElemType::kFloat, {1, 3, 2, 2})});
    m.graph.initializers = {named(ElemType::kFloat, {3}, kScales, "s"), named(ElemType::kUint8, {3}, zps, "zp")};
    const std::vector<HostTensor> in{named(ElemType::kUint8, {1, 3, 2, 2}, x, "x")};
    Result<std::vector<HostTensor>> out = run_model(m, precision, in);
    ASSERT_TRUE(out) << out.status().message();
    const auto got = (*out)[0].values<float>();
    ASSERT_EQ(got.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(got[i], static_cast<float>((x[i] - zps[i / 4]) * kScales[i / 4])) << dtype_name(precision) << " " << i;
    }
  }
}

// A [1, k] times B [k, 1], every difference from the zero points as large as 8 bits allow.
Model matmul_integer_model(int64_t k) {
  Model m = model_of({node("MatMulInteger", {"a", "b", "azp", "bzp"}, {"y"})},
                     {info("a", ElemType::kInt8, {1, k}), info("b", ElemType::kUint8, {k, 1})},
                     {info("y", ElemType::kInt32, {1, 1})});
  m.graph.initializers = {named(ElemType::kInt8, {}, {127}, "azp"), named(ElemType::kUint8, {1}, {0}, "bzp")};
  return m;
}

TEST_F(OnnxEngineTest, MatMulIntegerIsExactUpToItsLongestSumAndRefusedBeyond) {
  constexpr int64_t kLongest = 258;  // 258 · 255² < 2^24 < 259 · 255²
  for (DType precision : kPrecisions) {
    const std::vector<HostTensor> in{named(ElemType::kInt8, {1, kLongest}, std::vector<double>(kLongest, -128), "a"),
                                     named(ElemType::kUint8, {kLongest, 1}, std::vector<double>(kLongest, 255), "b")};
    Result<std::vector<HostTensor>> out = run_model(matmul_integer_model(kLongest), precision, in);
    ASSERT_TRUE(out) << out.status().message();
    EXPECT_EQ(host_int64s((*out)[0]).value(), (std::vector<int64_t>{-kLongest * 255 * 255})) << dtype_name(precision);

    const std::vector<HostTensor> longer{
        named(ElemType::kInt8, {1, kLongest + 1}, std::vector<double>(kLongest + 1, 1), "a"),
        named(ElemType::kUint8, {kLongest + 1, 1}, std::vector<double>(kLongest + 1, 1), "b")};
    Result<std::vector<HostTensor>> refused = run_model(matmul_integer_model(kLongest + 1), precision, longer);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.status().message().find("sums of 259 products"), std::string::npos) << refused.status().message();
  }
}

}  // namespace
}  // namespace recon::gpu::onnx
