// ONNX's quantization ops beyond what the node tests reach: QuantizeLinear per channel of a 4-D
// tensor, rounding ties to even and saturating at both ends of int8 and uint8; DequantizeLinear
// per channel, folded and on the device; MatMulInteger and ConvInteger whose sums leave fp32's exact
// integers, with zero points per row, column or output channel; QLinearMatMul and QLinearConv with
// scales per row, column or output channel, a bias, saturating; fp16 graphs keeping fp32 where
// rounding needs it; a QDQ Conv graph end to end; in fp32 and fp16.
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

// An fp16 graph divides in fp32: 2206 / 11 = 200.545… rounds to 201, where the quotient stored in
// fp16 (200.5, a tie) would round to 200.
TEST_F(OnnxEngineTest, QuantizeLinearDividesInFp32InAnFp16Graph) {
  for (DType precision : kPrecisions) {
    Model m = model_of({node("QuantizeLinear", {"x", "s"}, {"y"})}, {info("x", ElemType::kFloat, {1})},
                       {info("y", ElemType::kUint8, {1})});
    m.graph.initializers = {named(ElemType::kFloat, {}, {11}, "s")};
    const std::vector<HostTensor> in{named(ElemType::kFloat, {1}, {2206}, "x")};
    Result<std::vector<HostTensor>> out = run_model(m, precision, in);
    ASSERT_TRUE(out) << out.status().message();
    EXPECT_EQ(host_int64s((*out)[0]).value(), (std::vector<int64_t>{201})) << dtype_name(precision);
  }
}

// x [2, 3, 4, 4], on the device as a graph input, and folded on the host as an initializer (a QDQ
// model's weights).
TEST_F(OnnxEngineTest, DequantizeLinearPerChannelOfA4DTensor) {
  std::vector<double> x;
  for (int64_t i = 0; i < 96; ++i) x.push_back(static_cast<double>((i * 77) % 256));
  x[0] = 0;
  x[1] = 255;
  const std::vector<double> zps{128, 10, 0};
  for (DType precision : kPrecisions) {
    for (bool constant : {false, true}) {
      Model m = model_of({node("DequantizeLinear", {"x", "s", "zp"}, {"y"})}, {},
                         {info("y", ElemType::kFloat, {2, 3, 4, 4})});
      m.graph.initializers = {named(ElemType::kFloat, {3}, kScales, "s"), named(ElemType::kUint8, {3}, zps, "zp")};
      std::vector<HostTensor> in;
      if (constant) {
        m.graph.initializers.push_back(named(ElemType::kUint8, {2, 3, 4, 4}, x, "x"));
      } else {
        m.graph.inputs.push_back(info("x", ElemType::kUint8, {2, 3, 4, 4}));
        in.push_back(named(ElemType::kUint8, {2, 3, 4, 4}, x, "x"));
      }
      const std::string what = std::string(dtype_name(precision)) + (constant ? " folded" : " on the device");
      Result<std::vector<HostTensor>> out = run_model(m, precision, in);
      ASSERT_TRUE(out) << what << ": " << out.status().message();
      const auto got = (*out)[0].values<float>();
      ASSERT_EQ(got.size(), x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        const size_t c = (i / 16) % 3;
        EXPECT_EQ(got[i], static_cast<float>((x[i] - zps[c]) * kScales[c])) << what << " " << i;
      }
    }
  }
}

// Deterministic values spread over an 8-bit type's range.
std::vector<double> spread(int64_t n, int64_t lo, int64_t step) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>(lo + (i * step) % 256));
  return v;
}

// A [m, k] int8 times B [k, n] uint8 less their zero points (A's per row, B's per column), in
// int64 on the host.
std::vector<int64_t> integer_product(const std::vector<double>& a, const std::vector<double>& azp,
                                     const std::vector<double>& b, const std::vector<double>& bzp, int64_t m, int64_t k,
                                     int64_t n) {
  std::vector<int64_t> y;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t t = 0; t < k; ++t) {
        sum += static_cast<int64_t>(a[i * k + t] - azp[i]) * static_cast<int64_t>(b[t * n + j] - bzp[j]);
      }
      y.push_back(sum);
    }
  }
  return y;
}

// Sums beyond fp32's exact integers: K = 258 (the longest one fp32 GEMM holds, 258 · 255² < 2^24)
// and K = 1000 in pieces added in i32, each difference from the zero points as large as 8 bits allow;
// then K = 600 with zero points per row of A and per column of B.
TEST_F(OnnxEngineTest, MatMulIntegerIsExactBeyondFp32sIntegers) {
  for (DType precision : kPrecisions) {
    for (int64_t k : {258, 1000}) {
      Model m = model_of({node("MatMulInteger", {"a", "b", "azp", "bzp"}, {"y"})},
                         {info("a", ElemType::kInt8, {1, k}), info("b", ElemType::kUint8, {k, 1})},
                         {info("y", ElemType::kInt32, {1, 1})});
      m.graph.initializers = {named(ElemType::kInt8, {}, {127}, "azp"), named(ElemType::kUint8, {1}, {0}, "bzp")};
      const std::vector<HostTensor> in{named(ElemType::kInt8, {1, k}, std::vector<double>(k, -128), "a"),
                                       named(ElemType::kUint8, {k, 1}, std::vector<double>(k, 255), "b")};
      Result<std::vector<HostTensor>> out = run_model(m, precision, in);
      ASSERT_TRUE(out) << out.status().message();
      EXPECT_EQ(host_int64s((*out)[0]).value(), (std::vector<int64_t>{-k * 255 * 255}))
          << "K = " << k << " " << dtype_name(precision);
    }
    constexpr int64_t kM = 3, kK = 600, kN = 2;
    const std::vector<double> a = spread(kM * kK, -128, 37), b = spread(kK * kN, 0, 101);
    const std::vector<double> azp{-128, 0, 127}, bzp{255, 3};
    Model m = model_of({node("MatMulInteger", {"a", "b", "azp", "bzp"}, {"y"})},
                       {info("a", ElemType::kInt8, {kM, kK}), info("b", ElemType::kUint8, {kK, kN})},
                       {info("y", ElemType::kInt32, {kM, kN})});
    m.graph.initializers = {named(ElemType::kInt8, {kM}, azp, "azp"), named(ElemType::kUint8, {kN}, bzp, "bzp")};
    const std::vector<HostTensor> in{named(ElemType::kInt8, {kM, kK}, a, "a"),
                                     named(ElemType::kUint8, {kK, kN}, b, "b")};
    Result<std::vector<HostTensor>> out = run_model(m, precision, in);
    ASSERT_TRUE(out) << out.status().message();
    EXPECT_EQ(host_int64s((*out)[0]).value(), integer_product(a, azp, b, bzp, kM, kK, kN)) << dtype_name(precision);
  }
}

// 40 input channels of 3 × 3 taps (360 products per sum, in two pieces of 20 channels), padded by
// the input's zero point, W's zero point per output channel.
TEST_F(OnnxEngineTest, ConvIntegerSumsItsChannelsInPiecesExactly) {
  constexpr int64_t kC = 40, kH = 4, kM = 2;
  const std::vector<double> x = spread(kC * kH * kH, 0, 53), w = spread(kM * kC * 9, -128, 71);
  const std::vector<double> wzp{-128, 5};
  constexpr int64_t kXzp = 200;
  std::vector<int64_t> want;
  for (int64_t o = 0; o < kM; ++o) {
    for (int64_t i = 0; i < kH; ++i) {
      for (int64_t j = 0; j < kH; ++j) {
        int64_t sum = 0;
        for (int64_t c = 0; c < kC; ++c) {
          for (int64_t di = 0; di < 3; ++di) {
            for (int64_t dj = 0; dj < 3; ++dj) {
              const int64_t y = i + di - 1, z = j + dj - 1;
              if (y < 0 || y >= kH || z < 0 || z >= kH) continue;
              sum += (static_cast<int64_t>(x[(c * kH + y) * kH + z]) - kXzp) *
                     (static_cast<int64_t>(w[((o * kC + c) * 3 + di) * 3 + dj]) - static_cast<int64_t>(wzp[o]));
            }
          }
        }
        want.push_back(sum);
      }
    }
  }
  for (DType precision : kPrecisions) {
    Node conv = node("ConvInteger", {"x", "w", "xzp", "wzp"}, {"y"});
    conv.attributes.push_back(ints_attribute("pads", {1, 1, 1, 1}));
    Model m = model_of({conv}, {info("x", ElemType::kUint8, {1, kC, kH, kH})},
                       {info("y", ElemType::kInt32, {1, kM, kH, kH})});
    m.graph.initializers = {named(ElemType::kInt8, {kM, kC, 3, 3}, w, "w"), named(ElemType::kUint8, {}, {kXzp}, "xzp"),
                            named(ElemType::kInt8, {kM}, wzp, "wzp")};
    const std::vector<HostTensor> in{named(ElemType::kUint8, {1, kC, kH, kH}, x, "x")};
    Result<std::vector<HostTensor>> out = run_model(m, precision, in);
    ASSERT_TRUE(out) << out.status().message();
    EXPECT_EQ(host_int64s((*out)[0]).value(), want) << dtype_name(precision);
  }
}

// QLinearMatMul of a uint8 A [2, 300] (scale and zero point per row) and an int8 B [300, 3] (per
// column) into int8: the exact sums (two pieces) times a_scale · b_scale / y_scale in fp32, rounded
// half to even and saturated at both ends.
TEST_F(OnnxEngineTest, QLinearMatMulPerRowAndColumnRequantizesAndSaturates) {
  constexpr int64_t kM = 2, kK = 300, kN = 3;
  const std::vector<double> a = spread(kM * kK, 0, 37), b = spread(kK * kN, -128, 101);
  const std::vector<double> as{0.02, 0.5}, azp{0, 255}, bs{0.01, 0.25, 0.125}, bzp{-128, 0, 5};
  const double ys = 4;
  constexpr int64_t kYzp = -3;
  const std::vector<int64_t> sums = integer_product(a, azp, b, bzp, kM, kK, kN);
  std::vector<int64_t> want;
  for (int64_t i = 0; i < kM; ++i) {
    for (int64_t j = 0; j < kN; ++j) {
      const float multiplier = static_cast<float>(as[i]) * static_cast<float>(bs[j]) / static_cast<float>(ys);
      const float v = static_cast<float>(sums[i * kN + j]) * multiplier;
      want.push_back(std::clamp(static_cast<int64_t>(std::nearbyint(v)) + kYzp, int64_t{-128}, int64_t{127}));
    }
  }
  EXPECT_EQ(want, (std::vector<int64_t>{127, 19, -110, -128, 127, 127}));  // both ends reached
  for (DType precision : kPrecisions) {
    Model m = model_of({node("QLinearMatMul", {"a", "as", "azp", "b", "bs", "bzp", "ys", "yzp"}, {"y"})},
                       {info("a", ElemType::kUint8, {kM, kK})}, {info("y", ElemType::kInt8, {kM, kN})});
    m.graph.initializers = {named(ElemType::kFloat, {kM}, as, "as"),  named(ElemType::kUint8, {kM}, azp, "azp"),
                            named(ElemType::kInt8, {kK, kN}, b, "b"), named(ElemType::kFloat, {kN}, bs, "bs"),
                            named(ElemType::kInt8, {kN}, bzp, "bzp"), named(ElemType::kFloat, {}, {ys}, "ys"),
                            named(ElemType::kInt8, {}, {kYzp}, "yzp")};
    const std::vector<HostTensor> in{named(ElemType::kUint8, {kM, kK}, a, "a")};
    Result<std::vector<HostTensor>> out = run_model(m, precision, in);
    ASSERT_TRUE(out) << out.status().message();
    EXPECT_EQ(host_int64s((*out)[0]).value(), want) << dtype_name(precision);
  }
}

// QLinearConv into uint8 with W's scale and zero point per output channel and an int32 bias added
// to the exact sums before the rescale.
TEST_F(OnnxEngineTest, QLinearConvPerChannelWithBias) {
  constexpr int64_t kC = 2, kH = 3, kM = 2, kO = 2;  // 2 × 2 kernel, no padding: 2 × 2 outputs
  const std::vector<double> x = spread(kC * kH * kH, 0, 53), w = spread(kM * kC * 4, -128, 71);
  const std::vector<double> ws{0.05, 0.002}, wzp{3, -7}, bias{-20000, 1500};
  const double xs = 0.1, ys = 0.3;
  constexpr int64_t kXzp = 100, kYzp = 120;
  std::vector<int64_t> want;
  for (int64_t o = 0; o < kM; ++o) {
    const float multiplier = static_cast<float>(xs) * static_cast<float>(ws[o]) / static_cast<float>(ys);
    for (int64_t i = 0; i < kO; ++i) {
      for (int64_t j = 0; j < kO; ++j) {
        auto sum = static_cast<int64_t>(bias[o]);
        for (int64_t c = 0; c < kC; ++c) {
          for (int64_t di = 0; di < 2; ++di) {
            for (int64_t dj = 0; dj < 2; ++dj) {
              sum += (static_cast<int64_t>(x[(c * kH + i + di) * kH + j + dj]) - kXzp) *
                     (static_cast<int64_t>(w[((o * kC + c) * 2 + di) * 2 + dj]) - static_cast<int64_t>(wzp[o]));
            }
          }
        }
        const float v = static_cast<float>(sum) * multiplier;
        want.push_back(std::clamp(static_cast<int64_t>(std::nearbyint(v)) + kYzp, int64_t{0}, int64_t{255}));
      }
    }
  }
  EXPECT_EQ(want, (std::vector<int64_t>{209, 224, 0, 0, 113, 135, 113, 110}));  // the bias saturates two
  for (DType precision : kPrecisions) {
    Model m = model_of({node("QLinearConv", {"x", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "b"}, {"y"})},
                       {info("x", ElemType::kUint8, {1, kC, kH, kH})}, {info("y", ElemType::kUint8, {1, kM, kO, kO})});
    m.graph.initializers = {named(ElemType::kFloat, {}, {xs}, "xs"),        named(ElemType::kUint8, {}, {kXzp}, "xzp"),
                            named(ElemType::kInt8, {kM, kC, 2, 2}, w, "w"), named(ElemType::kFloat, {kM}, ws, "ws"),
                            named(ElemType::kInt8, {kM}, wzp, "wzp"),       named(ElemType::kFloat, {}, {ys}, "ys"),
                            named(ElemType::kUint8, {}, {kYzp}, "yzp"),     named(ElemType::kInt32, {kM}, bias, "b")};
    const std::vector<HostTensor> in{named(ElemType::kUint8, {1, kC, kH, kH}, x, "x")};
    Result<std::vector<HostTensor>> out = run_model(m, precision, in);
    ASSERT_TRUE(out) << out.status().message();
    EXPECT_EQ(host_int64s((*out)[0]).value(), want) << dtype_name(precision);
  }
}

// An fp16 graph keeps QLinearMatMul's scales in fp32: 100 · 1.00502 rounds to 101, where the scale
// rounded to fp16 (1.004883) would give 100.
TEST_F(OnnxEngineTest, QLinearMatMulScalesStayFp32InAnFp16Graph) {
  for (DType precision : kPrecisions) {
    Model m = model_of({node("QLinearMatMul", {"a", "as", "zp", "b", "bs", "zp", "bs", "zp"}, {"y"})},
                       {info("a", ElemType::kUint8, {1, 1})}, {info("y", ElemType::kUint8, {1, 1})});
    m.graph.initializers = {named(ElemType::kFloat, {}, {1.00502}, "as"), named(ElemType::kUint8, {}, {0}, "zp"),
                            named(ElemType::kUint8, {1, 1}, {1}, "b"), named(ElemType::kFloat, {}, {1}, "bs")};
    const std::vector<HostTensor> in{named(ElemType::kUint8, {1, 1}, {100}, "a")};
    Result<std::vector<HostTensor>> out = run_model(m, precision, in);
    ASSERT_TRUE(out) << out.status().message();
    EXPECT_EQ(host_int64s((*out)[0]).value(), (std::vector<int64_t>{101})) << dtype_name(precision);
  }
}

// A QDQ graph as quantizing exporters write it: x quantized and dequantized, a 1 × 1 Conv whose int8
// weight is dequantized per output channel (folded at load), its output quantized and dequantized.
// Scales are powers of two, so every float is exact and y / y_scale lands on ties, which go to even.
TEST_F(OnnxEngineTest, QdqConvMatchesItsIntegerDefinition) {
  constexpr int64_t kC = 3, kM = 2, kP = 4;  // channels in, out, pixels (2 × 2)
  const std::vector<double> x{0.3, -1.2, 2.6, 7.9, -0.4, 0.5, 1.5, -3.1, 4.2, 0.0, -2.2, 1.1};
  const std::vector<double> w{3, -5, 7, -128, 127, 2}, wscale{0.25, 0.125};
  const double xs = 0.5, ys = 0.25;
  constexpr int64_t kXzp = 10, kYzp = -20;
  const auto sat = [](double v, int64_t lo, int64_t hi) {
    return std::clamp(static_cast<int64_t>(std::nearbyint(v)), lo, hi);
  };
  std::vector<double> want;
  for (int64_t o = 0; o < kM; ++o) {
    for (int64_t p = 0; p < kP; ++p) {
      double y = 0;
      for (int64_t c = 0; c < kC; ++c) {
        const double xq = static_cast<double>(sat(x[c * kP + p] / xs + kXzp, 0, 255) - kXzp) * xs;
        y += xq * w[o * kC + c] * wscale[o];
      }
      want.push_back(static_cast<double>(sat(y / ys + kYzp, -128, 127) - kYzp) * ys);
    }
  }
  for (DType precision : kPrecisions) {
    Model m = model_of(
        {node("QuantizeLinear", {"x", "xs", "xzp"}, {"xq"}), node("DequantizeLinear", {"xq", "xs", "xzp"}, {"xd"}),
         node("DequantizeLinear", {"w", "ws", "wzp"}, {"wd"}), node("Conv", {"xd", "wd"}, {"c"}),
         node("QuantizeLinear", {"c", "ys", "yzp"}, {"yq"}), node("DequantizeLinear", {"yq", "ys", "yzp"}, {"y"})},
        {info("x", ElemType::kFloat, {1, kC, 2, 2})}, {info("y", ElemType::kFloat, {1, kM, 2, 2})});
    m.graph.initializers = {named(ElemType::kFloat, {}, {xs}, "xs"),        named(ElemType::kUint8, {}, {kXzp}, "xzp"),
                            named(ElemType::kInt8, {kM, kC, 1, 1}, w, "w"), named(ElemType::kFloat, {kM}, wscale, "ws"),
                            named(ElemType::kInt8, {kM}, {0, 0}, "wzp"),    named(ElemType::kFloat, {}, {ys}, "ys"),
                            named(ElemType::kInt8, {}, {kYzp}, "yzp")};
    Node& dq_w = m.graph.nodes[2];
    dq_w.attributes.push_back(int_attribute("axis", 0));
    const std::vector<HostTensor> in{named(ElemType::kFloat, {1, kC, 2, 2}, x, "x")};
    Result<std::vector<HostTensor>> out = run_model(m, precision, in);
    ASSERT_TRUE(out) << out.status().message();
    const auto got = (*out)[0].values<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i], static_cast<float>(want[i])) << dtype_name(precision) << " " << i;
    }
  }
}

}  // namespace
}  // namespace recon::gpu::onnx
