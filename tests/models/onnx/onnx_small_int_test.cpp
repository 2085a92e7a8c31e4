// int8, uint8, int16 and uint16 tensors, held as i32 words on the device: inputs widened on upload
// and outputs narrowed on download (each type's extremes); Add, Sub, Mul, Div and Sum wrapping
// modulo 2^8 or 2^16 on the device as NumPy's do (each result read as a float too, which the
// download does not narrow); Max, Min, Mod, Clip and MaxPool; Cast to and from floats and between
// integers (narrowing wraps); in fp32 and fp16. uint32, which does not fit i32, is refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpu/models/onnx/onnx_engine.h"
#include "gpu/models/onnx/onnx_host.h"
#include "gpu/weights/half_float.h"
#include "tests/models/onnx/onnx_engine_test_util.h"

namespace recon::gpu::onnx {
namespace {

constexpr DType kPrecisions[] = {DType::kF32, DType::kF16};
constexpr ElemType kNarrow[] = {ElemType::kInt8, ElemType::kUint8, ElemType::kInt16, ElemType::kUint16};

// v narrowed to `type` as C++ (and NumPy) narrow integers: modulo 2^8 or 2^16 into its range.
int64_t wrapped(int64_t v, ElemType type) {
  switch (type) {
    case ElemType::kInt8:
      return static_cast<int8_t>(v);
    case ElemType::kUint8:
      return static_cast<uint8_t>(v);
    case ElemType::kInt16:
      return static_cast<int16_t>(v);
    case ElemType::kUint16:
      return static_cast<uint16_t>(v);
    default:
      return v;
  }
}

// Each type's extremes and a few values between.
std::vector<double> extremes(ElemType type) {
  switch (type) {
    case ElemType::kInt8:
      return {-128, -1, 0, 127};
    case ElemType::kUint8:
      return {0, 1, 128, 255};
    case ElemType::kInt16:
      return {-32768, -1, 300, 32767};
    default:
      return {0, 1, 32768, 65535};
  }
}

HostTensor ints(ElemType type, const std::vector<double>& v) {
  return make_tensor(type, {static_cast<int64_t>(v.size())}, v).value();
}

void expect_ints(const HostTensor& got, ElemType type, const std::vector<int64_t>& want, const std::string& what) {
  EXPECT_EQ(got.type, type) << what;
  const std::vector<int64_t> g = host_int64s(got).value();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(g[i], want[i]) << what << " element " << i;
}

// Adds output f = Cast(y, FLOAT): the device's word as it is, where the download to y's type
// would narrow it anyway.
void add_float_view(Model& m, int64_t n) {
  Node c = node("Cast", {"y"}, {"f"});
  c.attributes.push_back(int_attribute("to", static_cast<int64_t>(ElemType::kFloat)));
  m.graph.nodes.push_back(c);
  m.graph.outputs.push_back(info("f", ElemType::kFloat, {n}));
}

// f (add_float_view) holds `want`, as the execution precision rounds it.
void expect_float_view(const HostTensor& f, const std::vector<int64_t>& want, DType precision,
                       const std::string& what) {
  const auto got = f.values<float>();
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    const auto v = static_cast<float>(want[i]);
    EXPECT_EQ(got[i], precision == DType::kF32 ? v : f16_to_f32(f32_to_f16(v))) << what << " (as float) element " << i;
  }
}

// y = op(a, b) of `type` over [n] operands.
Model binary_model(const std::string& op, ElemType type, int64_t n, std::vector<Attribute> attrs = {}) {
  Node nd = node(op, {"a", "b"}, {"y"});
  nd.attributes = std::move(attrs);
  return model_of({nd}, {info("a", type, {n}), info("b", type, {n})}, {info("y", type, {n})});
}

TEST_F(OnnxEngineTest, NarrowIntegersRoundTripTheirExtremesThroughTheDevice) {
  for (DType precision : kPrecisions) {
    for (ElemType type : kNarrow) {
      const std::vector<double> v = extremes(type);
      const auto n = static_cast<int64_t>(v.size());
      // Max(x, x): the values go up as i32 words, through an integer kernel, and back down.
      Model m = model_of({node("Max", {"x", "x"}, {"y"})}, {info("x", type, {n})}, {info("y", type, {n})});
      const std::vector<HostTensor> in{ints(type, v)};
      Result<std::vector<HostTensor>> out = run_model(m, precision, in);
      ASSERT_TRUE(out) << elem_type_name(type) << ": " << out.status().message();
      expect_ints((*out)[0], type, std::vector<int64_t>(v.begin(), v.end()),
                  std::string(elem_type_name(type)) + " " + dtype_name(precision));
    }
  }
}

TEST_F(OnnxEngineTest, NarrowIntegerArithmeticWrapsAsNumPyDoes) {
  struct Case {
    ElemType type;
    std::vector<double> a, b;
  };
  const std::vector<Case> cases{
      {ElemType::kUint8, {250, 3, 200, 0, 255}, {10, 5, 100, 1, 255}},
      {ElemType::kInt8, {127, -128, 100, -3, -128}, {1, -1, 100, 5, 127}},
      {ElemType::kUint16, {65535, 300, 2, 0, 40000}, {1, 300, 3, 1, 30000}},
      {ElemType::kInt16, {32767, -32768, 300, -7, 200}, {1, -1, 300, 2, -200}},
  };
  const std::vector<std::pair<std::string, std::function<int64_t(int64_t, int64_t)>>> ops{
      {"Add", [](int64_t x, int64_t y) { return x + y; }},
      {"Sub", [](int64_t x, int64_t y) { return x - y; }},
      {"Mul", [](int64_t x, int64_t y) { return x * y; }},
      {"Div", [](int64_t x, int64_t y) { return x / y; }},  // truncating, as C++ does
      {"Sum", [](int64_t x, int64_t y) { return x + y; }},
  };
  for (DType precision : kPrecisions) {
    for (const Case& c : cases) {
      const auto n = static_cast<int64_t>(c.a.size());
      const std::vector<HostTensor> in{ints(c.type, c.a), ints(c.type, c.b)};
      for (const auto& [op, f] : ops) {
        const std::string what = op + " " + elem_type_name(c.type) + " " + dtype_name(precision);
        Model m = binary_model(op, c.type, n);
        add_float_view(m, n);
        Result<std::vector<HostTensor>> out = run_model(m, precision, in);
        ASSERT_TRUE(out) << what << ": " << out.status().message();
        std::vector<int64_t> want;
        for (size_t i = 0; i < c.a.size(); ++i) {
          want.push_back(wrapped(f(static_cast<int64_t>(c.a[i]), static_cast<int64_t>(c.b[i])), c.type));
        }
        expect_ints((*out)[0], c.type, want, what);
        expect_float_view((*out)[1], want, precision, what);
      }
    }
  }
}

TEST_F(OnnxEngineTest, NarrowIntegerMaxMinModAndClipStayInTheirType) {
  const std::vector<double> a{-128, 7, -4, 127, 5}, b{7, -3, 3, -128, -2};
  // Python's %: the sign of the divisor.
  const auto py_mod = [](int64_t x, int64_t y) {
    const int64_t r = x % y;
    return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
  };
  for (DType precision : kPrecisions) {
    const std::string p = dtype_name(precision);
    const std::vector<HostTensor> in{ints(ElemType::kInt8, a), ints(ElemType::kInt8, b)};
    Result<std::vector<HostTensor>> mx = run_model(binary_model("Max", ElemType::kInt8, 5), precision, in);
    Result<std::vector<HostTensor>> mn = run_model(binary_model("Min", ElemType::kInt8, 5), precision, in);
    Result<std::vector<HostTensor>> md = run_model(binary_model("Mod", ElemType::kInt8, 5), precision, in);
    ASSERT_TRUE(mx && mn && md) << p;
    std::vector<int64_t> want_max, want_min, want_mod;
    for (size_t i = 0; i < a.size(); ++i) {
      const auto x = static_cast<int64_t>(a[i]), y = static_cast<int64_t>(b[i]);
      want_max.push_back(std::max(x, y));
      want_min.push_back(std::min(x, y));
      want_mod.push_back(py_mod(x, y));
    }
    expect_ints((*mx)[0], ElemType::kInt8, want_max, "Max " + p);
    expect_ints((*mn)[0], ElemType::kInt8, want_min, "Min " + p);
    expect_ints((*md)[0], ElemType::kInt8, want_mod, "Mod " + p);

    // uint16 Mod (fmod 0 and 1 agree for unsigned operands).
    const std::vector<HostTensor> u{ints(ElemType::kUint16, {65535, 1000, 7}),
                                    ints(ElemType::kUint16, {256, 7, 65535})};
    Result<std::vector<HostTensor>> um = run_model(binary_model("Mod", ElemType::kUint16, 3), precision, u);
    ASSERT_TRUE(um) << um.status().message();
    expect_ints((*um)[0], ElemType::kUint16, {255, 6, 7}, "Mod UINT16 " + p);

    // Clip of int8 with bounds given at run time and as constants.
    for (bool constant_bounds : {false, true}) {
      Model m = model_of({node("Clip", {"x", "lo", "hi"}, {"y"})}, {info("x", ElemType::kInt8, {5})},
                         {info("y", ElemType::kInt8, {5})});
      std::vector<HostTensor> clip_in{ints(ElemType::kInt8, a)};
      HostTensor lo = make_tensor(ElemType::kInt8, {}, std::vector<double>{-5}).value();
      HostTensor hi = make_tensor(ElemType::kInt8, {}, std::vector<double>{100}).value();
      lo.name = "lo";
      hi.name = "hi";
      if (constant_bounds) {
        m.graph.initializers.push_back(lo);
        m.graph.initializers.push_back(hi);
      } else {
        m.graph.inputs.push_back(info("lo", ElemType::kInt8, {}));
        m.graph.inputs.push_back(info("hi", ElemType::kInt8, {}));
        clip_in.push_back(lo);
        clip_in.push_back(hi);
      }
      Result<std::vector<HostTensor>> out = run_model(m, precision, clip_in);
      ASSERT_TRUE(out) << out.status().message();
      expect_ints((*out)[0], ElemType::kInt8, {-5, 7, -4, 100, 5},
                  std::string("Clip ") + (constant_bounds ? "constant " : "run-time ") + p);
    }
  }
}

// MaxPool of int8 and uint8 compares the i32 words, so each type's extremes come back exact in
// either precision; AveragePool of them is refused.
TEST_F(OnnxEngineTest, NarrowIntegerMaxPoolIsExact) {
  struct Case {
    ElemType type;
    std::vector<double> x;
    std::vector<int64_t> want;
  };
  const Case cases[] = {{ElemType::kInt8, {-128, -7, 127, 3, -100, -128, 5, 126}, {-7, 127}},
                        {ElemType::kUint8, {0, 255, 1, 128, 254, 3, 200, 200}, {255, 200}}};
  for (DType precision : kPrecisions) {
    for (const Case& c : cases) {
      Node pool = node("MaxPool", {"x"}, {"y"});
      pool.attributes = {ints_attribute("kernel_shape", {2, 2}), ints_attribute("strides", {2, 2})};
      Model m = model_of({pool}, {info("x", c.type, {1, 1, 2, 4})}, {info("y", c.type, {1, 1, 1, 2})});
      const std::vector<HostTensor> in{make_tensor(c.type, {1, 1, 2, 4}, c.x).value()};
      Result<std::vector<HostTensor>> out = run_model(m, precision, in);
      ASSERT_TRUE(out) << out.status().message();
      expect_ints((*out)[0], c.type, c.want,
                  std::string("MaxPool ") + elem_type_name(c.type) + " " + dtype_name(precision));
    }
  }
  Node avg = node("AveragePool", {"x"}, {"y"});
  avg.attributes = {ints_attribute("kernel_shape", {2, 2})};
  Model m = model_of({avg}, {info("x", ElemType::kUint8, {1, 1, 2, 2})}, {info("y", ElemType::kUint8, {1, 1, 1, 1})});
  const std::vector<HostTensor> in{
      make_tensor(ElemType::kUint8, {1, 1, 2, 2}, std::vector<double>{1, 2, 3, 4}).value()};
  EXPECT_FALSE(run_model(m, DType::kF32, in)) << "AveragePool of uint8";
}

TEST_F(OnnxEngineTest, NarrowIntegersCastToAndFromFloatsAndWrapWhenNarrowed) {
  // Cast: one node of `from` to `to` over [n].
  const auto cast_model = [](ElemType from, ElemType to, int64_t n) {
    Node c = node("Cast", {"x"}, {"y"});
    c.attributes.push_back(int_attribute("to", static_cast<int64_t>(to)));
    return model_of({c}, {info("x", from, {n})}, {info("y", to, {n})});
  };
  for (DType precision : kPrecisions) {
    const std::string p = dtype_name(precision);
    // Floats truncate toward zero (values exact in fp16).
    struct FromFloat {
      ElemType to;
      std::vector<double> x;
      std::vector<int64_t> want;
    };
    for (const FromFloat& c :
         {FromFloat{ElemType::kInt8, {-2.75, 3.875, 127.5, -128.0}, {-2, 3, 127, -128}},
          FromFloat{ElemType::kUint8, {2.75, 254.875, 0.0, 128.25}, {2, 254, 0, 128}},
          FromFloat{ElemType::kInt16, {-32768.0, 1000.5, -7.5, 32752.0}, {-32768, 1000, -7, 32752}},
          FromFloat{ElemType::kUint16, {65504.0, 1.5, 0.0, 300.25}, {65504, 1, 0, 300}}}) {
      const std::vector<HostTensor> in{make_tensor(ElemType::kFloat, {4}, c.x).value()};
      Model m = cast_model(ElemType::kFloat, c.to, 4);
      add_float_view(m, 4);
      Result<std::vector<HostTensor>> out = run_model(m, precision, in);
      ASSERT_TRUE(out) << out.status().message();
      const std::string what = std::string("FLOAT to ") + elem_type_name(c.to) + " " + p;
      expect_ints((*out)[0], c.to, c.want, what);
      expect_float_view((*out)[1], c.want, precision, what);
    }
    // And back: each type's extremes, exact in fp32; fp16 rounds them to its nearest (65535 to inf).
    for (ElemType type : kNarrow) {
      const std::vector<double> v = extremes(type);
      const std::vector<HostTensor> in{ints(type, v)};
      Result<std::vector<HostTensor>> out = run_model(cast_model(type, ElemType::kFloat, 4), precision, in);
      ASSERT_TRUE(out) << out.status().message();
      const auto got = (*out)[0].values<float>();
      for (size_t i = 0; i < v.size(); ++i) {
        const auto f = static_cast<float>(v[i]);
        const float want = precision == DType::kF32 ? f : f16_to_f32(f32_to_f16(f));
        EXPECT_EQ(got[i], want) << elem_type_name(type) << " to FLOAT " << p << " element " << i;
      }
    }
    // Between integers: narrowing wraps, widening keeps the value.
    struct Between {
      ElemType from, to;
      std::vector<double> x;
    };
    for (const Between& c : {Between{ElemType::kInt32, ElemType::kInt8, {300, -129, 5, 128}},
                             Between{ElemType::kUint8, ElemType::kInt8, {255, 128, 127, 0}},
                             Between{ElemType::kInt16, ElemType::kUint8, {-1, 256, 511, -32768}},
                             Between{ElemType::kInt64, ElemType::kUint16, {-1, 65536, 70000, 12}},
                             Between{ElemType::kInt8, ElemType::kInt16, {-128, 127, -1, 0}},
                             Between{ElemType::kUint8, ElemType::kInt32, {255, 128, 0, 1}}}) {
      const std::vector<HostTensor> in{make_tensor(c.from, {4}, c.x).value()};
      Model m = cast_model(c.from, c.to, 4);
      add_float_view(m, 4);
      Result<std::vector<HostTensor>> out = run_model(m, precision, in);
      ASSERT_TRUE(out) << out.status().message();
      std::vector<int64_t> want;
      for (double x : c.x) want.push_back(wrapped(static_cast<int64_t>(x), c.to));
      const std::string what = std::string(elem_type_name(c.from)) + " to " + elem_type_name(c.to) + " " + p;
      expect_ints((*out)[0], c.to, want, what);
      expect_float_view((*out)[1], want, precision, what);
    }
  }
}

TEST_F(OnnxEngineTest, Uint32TensorsAreRefusedByType) {
  const std::vector<HostTensor> in{ints(ElemType::kUint32, {1, 2}), ints(ElemType::kUint32, {3, 4})};
  Result<std::vector<HostTensor>> out = run_model(binary_model("Add", ElemType::kUint32, 2), DType::kF32, in);
  ASSERT_FALSE(out);
  EXPECT_NE(out.status().message().find("UINT32"), std::string::npos) << out.status().message();
}

}  // namespace
}  // namespace recon::gpu::onnx
