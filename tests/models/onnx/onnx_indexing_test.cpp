// ONNX ops that read or write at tensor indices, and running sums, end to end against loop
// transcriptions of their ONNX definitions in double: ScatterElements with every reduction (and
// the deprecated Scatter), ScatterND with duplicate tuples, GatherND with batch_dims, CumSum in
// every mode, in fp32 and fp16, with indices computed at run time (more than a shape tensor's 64
// elements) or small enough to be shape tensors, and folded on the host where every input is
// known at load; Dropout's all-true mask and its training mode;
// the refusals, each naming the op.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gpu/models/onnx/onnx_engine.h"
#include "gpu/models/onnx/onnx_host.h"
#include "tests/models/onnx/onnx_engine_test_util.h"

namespace recon::gpu::onnx {
namespace {

// Values exact in fp16 and spread over [-2, 2): k-th of them.
double quarter(int64_t k, int64_t seed) {
  return 0.25 * static_cast<double>((k * 7 + seed * 3) % 16) - 2.0;
}

std::vector<double> quarters(int64_t n, int64_t seed) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = quarter(k, seed);
  return v;
}

double combine(double acc, double u, const std::string& reduction) {
  if (reduction == "add") return acc + u;
  if (reduction == "mul") return acc * u;
  if (reduction == "max") return std::max(acc, u);
  if (reduction == "min") return std::min(acc, u);
  return u;
}

// fp32 matches the double definition to rounding; fp16 storage to its 11 bits.
void expect_near_all(const HostTensor& got, const std::vector<double>& want, DType precision, const std::string& what) {
  const auto g = got.values<float>();
  ASSERT_EQ(g.size(), want.size()) << what;
  const double tol = precision == DType::kF32 ? 1e-6 : 1e-3;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_LE(std::abs(g[i] - want[i]), tol * std::max(1.0, std::abs(want[i]))) << what << " element " << i;
  }
}

HostTensor doubles_as(ElemType type, std::vector<int64_t> dims, const std::vector<double>& v) {
  return make_tensor(type, std::move(dims), v).value();
}

// ScatterElements along axis 1 of [4, 20] with 75 run-time indices (duplicates, negative ones),
// every reduction at its opset (add and mul from 16, max and min from 18), fp32 and fp16; Scatter
// (opset 10) as ScatterElements without a reduction.
TEST_F(OnnxEngineTest, ScatterElementsOfRunTimeIndicesMatchesItsDefinitionWithEveryReduction) {
  const int64_t rows = 4, cols = 20, urows = 3, ucols = 25;
  std::vector<int64_t> idx(static_cast<size_t>(urows * ucols));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i * 13 % (2 * cols)) - cols;  // [−20, 20)
  const auto data = quarters(rows * cols, 1), upd = quarters(urows * ucols, 2);
  const std::vector<HostTensor> inputs{doubles_as(ElemType::kFloat, {rows, cols}, data),
                                       make_int64_tensor({urows, ucols}, idx),
                                       doubles_as(ElemType::kFloat, {urows, ucols}, upd)};
  struct Case {
    const char* op;
    int64_t opset;
    const char* reduction;
  };
  for (const Case& c :
       {Case{"Scatter", 10, "none"}, Case{"ScatterElements", 11, "none"}, Case{"ScatterElements", 16, "add"},
        Case{"ScatterElements", 16, "mul"}, Case{"ScatterElements", 18, "max"}, Case{"ScatterElements", 18, "min"}}) {
    Node n = node(c.op, {"data", "indices", "updates"}, {"y"});
    n.attributes.push_back(int_attribute("axis", 1));
    if (c.opset >= 16) n.attributes.push_back(string_attribute("reduction", c.reduction));
    Model m = model_of({n},
                       {info("data", ElemType::kFloat, {rows, cols}), info("indices", ElemType::kInt64, {urows, ucols}),
                        info("updates", ElemType::kFloat, {urows, ucols})},
                       {info("y", ElemType::kFloat, {rows, cols})});
    m.opsets[""] = c.opset;
    std::vector<double> want = data;
    for (int64_t r = 0; r < urows; ++r) {
      for (int64_t j = 0; j < ucols; ++j) {
        const int64_t k = idx[static_cast<size_t>(r * ucols + j)];
        double& o = want[static_cast<size_t>(r * cols + (k < 0 ? k + cols : k))];
        o = combine(o, upd[static_cast<size_t>(r * ucols + j)], c.reduction);
      }
    }
    Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), m);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    EXPECT_FALSE((*engine)->is_shape_tensor(1)) << "indices computed at run time";
    for (const DType precision : {DType::kF32, DType::kF16}) {
      Result<std::vector<HostTensor>> y = run_model(m, precision, inputs);
      ASSERT_TRUE(y.is_ok()) << c.op << " " << c.reduction << ": " << y.status().to_string();
      expect_near_all((*y)[0], want, precision, std::string(c.op) + " " + c.reduction + " " + dtype_name(precision));
    }
  }
}

// ScatterND of 40 run-time tuples of two indices (duplicates) into [5, 6, 3] float data, each
// update a row of 3, with add and mul; and int64 data with add, its indices a shape tensor.
TEST_F(OnnxEngineTest, ScatterNDOfDuplicateTuplesMatchesItsDefinition) {
  const Shape s{5, 6, 3};
  const int64_t tuples = 40;
  std::vector<int64_t> idx;
  for (int64_t t = 0; t < tuples; ++t) {
    idx.push_back(t * 3 % 10 - 5);  // [−5, 5)
    idx.push_back(t * 5 % 6);
  }
  const auto data = quarters(shape_numel(s), 3), upd = quarters(tuples * 3, 4);
  const auto reference = [&](const std::vector<double>& d, const std::vector<int64_t>& ix, const std::vector<double>& u,
                             const std::string& reduction) {
    std::vector<double> out = d;
    for (size_t t = 0; t < ix.size() / 2; ++t) {
      const int64_t a = ix[2 * t] < 0 ? ix[2 * t] + s[0] : ix[2 * t], b = ix[2 * t + 1];
      for (int64_t i = 0; i < 3; ++i) {
        double& o = out[static_cast<size_t>((a * s[1] + b) * 3 + i)];
        o = combine(o, u[t * 3 + static_cast<size_t>(i)], reduction);
      }
    }
    return out;
  };
  for (const char* reduction : {"add", "mul"}) {
    Node n = node("ScatterND", {"data", "indices", "updates"}, {"y"});
    n.attributes.push_back(string_attribute("reduction", reduction));
    Model m = model_of({n},
                       {info("data", ElemType::kFloat, s), info("indices", ElemType::kInt64, {tuples, 2}),
                        info("updates", ElemType::kFloat, {tuples, 3})},
                       {info("y", ElemType::kFloat, s)});
    m.opsets[""] = 16;
    const std::vector<HostTensor> inputs{doubles_as(ElemType::kFloat, s, data), make_int64_tensor({tuples, 2}, idx),
                                         doubles_as(ElemType::kFloat, {tuples, 3}, upd)};
    for (const DType precision : {DType::kF32, DType::kF16}) {
      Result<std::vector<HostTensor>> y = run_model(m, precision, inputs);
      ASSERT_TRUE(y.is_ok()) << reduction << ": " << y.status().to_string();
      expect_near_all((*y)[0], reference(data, idx, upd, reduction), precision,
                      std::string("ScatterND ") + reduction + " " + dtype_name(precision));
    }
  }
  // int64 data in integer arithmetic; six tuples, a shape tensor uploaded once.
  Node n = node("ScatterND", {"data", "indices", "updates"}, {"y"});
  n.attributes.push_back(string_attribute("reduction", "add"));
  Model m = model_of({n},
                     {info("data", ElemType::kInt64, s), info("indices", ElemType::kInt64, {6, 2}),
                      info("updates", ElemType::kInt64, {6, 3})},
                     {info("y", ElemType::kInt64, s)});
  m.opsets[""] = 16;
  std::vector<int64_t> di(static_cast<size_t>(shape_numel(s))), ui(18);
  for (size_t i = 0; i < di.size(); ++i) di[i] = static_cast<int64_t>(i) * 1000 - 40000;
  for (size_t i = 0; i < ui.size(); ++i) ui[i] = static_cast<int64_t>(i * i) - 100;
  const std::vector<int64_t> small(idx.begin(), idx.begin() + 12);
  const std::vector<HostTensor> inputs{make_int64_tensor(s, di), make_int64_tensor({6, 2}, small),
                                       make_int64_tensor({6, 3}, ui)};
  Result<std::vector<HostTensor>> y = run_model(m, DType::kF32, inputs);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const std::vector<double> want =
      reference(std::vector<double>(di.begin(), di.end()), small, std::vector<double>(ui.begin(), ui.end()), "add");
  const auto got = (*y)[0].values<int64_t>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], static_cast<int64_t>(want[i])) << "element " << i;
}

// GatherND: [2, 3, 4] data by 40 run-time pairs (batch_dims 0), and by one index per batch row
// with batch_dims 1 (a shape tensor), fp32 and fp16.
TEST_F(OnnxEngineTest, GatherNDWithAndWithoutBatchDimsMatchesItsDefinition) {
  const Shape s{2, 3, 4};
  const auto data = quarters(shape_numel(s), 5);
  struct Case {
    int64_t batch_dims;
    Shape is, out;
  };
  for (const Case& c : {Case{0, {40, 2}, {40, 4}}, Case{1, {2, 5, 1}, {2, 5, 4}}}) {
    std::vector<int64_t> idx(static_cast<size_t>(shape_numel(c.is)));
    for (size_t i = 0; i < idx.size(); ++i) {
      const int64_t dim = s[static_cast<size_t>(c.batch_dims + static_cast<int64_t>(i) % c.is.back())];
      idx[i] = static_cast<int64_t>(i * 7 % static_cast<size_t>(2 * dim)) - dim;  // [−dim, dim)
    }
    Node n = node("GatherND", {"data", "indices"}, {"y"});
    n.attributes.push_back(int_attribute("batch_dims", c.batch_dims));
    Model m = model_of({n}, {info("data", ElemType::kFloat, s), info("indices", ElemType::kInt64, c.is)},
                       {info("y", ElemType::kFloat, c.out)});
    std::vector<double> want;
    const int64_t k = c.is.back(), rows = shape_numel(c.is) / k;
    for (int64_t row = 0; row < rows; ++row) {
      int64_t at = c.batch_dims == 1 ? row / c.is[1] : 0;  // the batch row, then the addressed axes
      for (int64_t j = 0; j < k; ++j) {
        const int64_t dim = s[static_cast<size_t>(c.batch_dims + j)], v = idx[static_cast<size_t>(row * k + j)];
        at = at * dim + (v < 0 ? v + dim : v);
      }
      for (int64_t i = 0; i < 4; ++i) want.push_back(data[static_cast<size_t>(at * 4 + i)]);
    }
    const std::vector<HostTensor> inputs{doubles_as(ElemType::kFloat, s, data), make_int64_tensor(c.is, idx)};
    for (const DType precision : {DType::kF32, DType::kF16}) {
      Result<std::vector<HostTensor>> y = run_model(m, precision, inputs);
      ASSERT_TRUE(y.is_ok()) << y.status().to_string();
      expect_near_all((*y)[0], want, precision,
                      "batch_dims " + std::to_string(c.batch_dims) + " " + dtype_name(precision));
    }
  }
}

// CumSum along either axis of [3, 5] in every mode, its axis a constant or a graph input (a shape
// tensor), float in fp32 and fp16 and int64.
TEST_F(OnnxEngineTest, CumSumInEveryModeMatchesItsDefinition) {
  const Shape s{3, 5};
  const auto x = quarters(15, 6);
  for (const ElemType type : {ElemType::kFloat, ElemType::kInt64}) {
    std::vector<double> xv = x;
    if (type == ElemType::kInt64) {
      for (double& v : xv) v = std::round(v * 1000.0);
    }
    for (int64_t axis = -2; axis < 2; ++axis) {
      for (int mode = 0; mode < 4; ++mode) {
        const bool exclusive = (mode & 1) != 0, reverse = (mode & 2) != 0;
        Node n = node("CumSum", {"x", "axis"}, {"y"});
        n.attributes.push_back(int_attribute("exclusive", exclusive));
        n.attributes.push_back(int_attribute("reverse", reverse));
        const bool axis_input = axis >= 0;  // the negative axes come as constants
        std::vector<ValueInfo> ins{info("x", type, s)};
        if (axis_input) ins.push_back(info("axis", ElemType::kInt64, {}));
        Model m = model_of({n}, ins, {info("y", type, s)});
        if (!axis_input) {
          m.graph.initializers.push_back(make_int64_tensor({}, std::vector<int64_t>{axis}));
          m.graph.initializers.back().name = "axis";
        }
        const int64_t a = axis < 0 ? axis + 2 : axis, len = s[static_cast<size_t>(a)];
        const int64_t stride = a == 0 ? 5 : 1, lines = a == 0 ? 5 : 3, line_step = a == 0 ? 1 : 5;
        std::vector<double> want(xv.size());
        for (int64_t l = 0; l < lines; ++l) {
          double sum = 0;
          for (int64_t j = 0; j < len; ++j) {
            const size_t at = static_cast<size_t>(l * line_step + (reverse ? len - 1 - j : j) * stride);
            if (exclusive) want[at] = sum;
            sum += xv[at];
            if (!exclusive) want[at] = sum;
          }
        }
        std::vector<HostTensor> inputs{doubles_as(type, s, xv)};
        if (axis_input) inputs.push_back(make_int64_tensor({}, std::vector<int64_t>{axis}));
        const std::string what = std::string(elem_type_name(type)) + " axis " + std::to_string(axis) + " exclusive " +
                                 std::to_string(exclusive) + " reverse " + std::to_string(reverse);
        for (const DType precision : {DType::kF32, DType::kF16}) {
          Result<std::vector<HostTensor>> y = run_model(m, precision, inputs);
          ASSERT_TRUE(y.is_ok()) << what << ": " << y.status().to_string();
          if (type == ElemType::kInt64) {
            const auto got = (*y)[0].values<int64_t>();
            for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], static_cast<int64_t>(want[i])) << what;
          } else {
            expect_near_all((*y)[0], want, precision, what + " " + dtype_name(precision));
          }
        }
      }
    }
  }
}

// Dropout's mask is all true (ones of the input's type before opset 10); its ratio and training mode as graph inputs
// are shape tensors; in training mode only ratio 0 runs (the identity), any other ratio is refused naming Dropout.
TEST_F(OnnxEngineTest, DropoutGivesAnAllTrueMaskAndRunsTrainingModeOnlyAtRatioZero) {
  Model m =
      model_of({node("Dropout", {"x", "r", "t"}, {"y", "mask"}, "drop")},
               {info("x", ElemType::kFloat, {2, 3}), info("r", ElemType::kFloat, {}), info("t", ElemType::kBool, {})},
               {info("y", ElemType::kFloat, {2, 3}), info("mask", ElemType::kBool, {2, 3})});
  Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), m);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  EXPECT_TRUE((*engine)->is_shape_tensor(1));
  EXPECT_TRUE((*engine)->is_shape_tensor(2));
  const std::vector<float> x{1.5f, -2.0f, 0.0f, 3.25f, -0.5f, 8.0f};
  const auto run = [&](double ratio, bool training) {
    const std::vector<HostTensor> inputs{
        float_tensor({2, 3}, x), make_tensor(ElemType::kFloat, {}, std::vector<double>{ratio}).value(),
        make_tensor(ElemType::kBool, {}, std::vector<double>{training ? 1.0 : 0.0}).value()};
    return (*engine)->run(inputs);
  };
  for (const auto& [ratio, training] : {std::pair{0.5, false}, std::pair{0.0, true}}) {
    Result<std::vector<HostTensor>> y = run(ratio, training);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    const auto got = (*y)[0].values<float>();
    EXPECT_EQ(std::vector<float>(got.begin(), got.end()), x);
    ASSERT_EQ((*y)[1].type, ElemType::kBool);
    const auto mask = (*y)[1].values<uint8_t>();
    EXPECT_EQ(std::vector<uint8_t>(mask.begin(), mask.end()), std::vector<uint8_t>(6, 1));
  }
  // Before opset 10 the mask has the input's type: ones.
  Model old = model_of({node("Dropout", {"x"}, {"y", "mask"})}, {info("x", ElemType::kFloat, {2, 3})},
                       {info("y", ElemType::kFloat, {2, 3}), info("mask", ElemType::kFloat, {2, 3})});
  old.opsets[""] = 7;
  Result<std::vector<HostTensor>> ones = run_model(old, DType::kF16, std::vector<HostTensor>{float_tensor({2, 3}, x)});
  ASSERT_TRUE(ones.is_ok()) << ones.status().to_string();
  ASSERT_EQ((*ones)[1].type, ElemType::kFloat);
  const auto one = (*ones)[1].values<float>();
  EXPECT_EQ(std::vector<float>(one.begin(), one.end()), std::vector<float>(6, 1.0f));

  Result<std::vector<HostTensor>> random = run(0.5, true);
  ASSERT_FALSE(random.is_ok());
  EXPECT_NE(random.status().message().find("Dropout 'drop'"), std::string::npos) << random.status().message();
  EXPECT_NE(random.status().message().find("training-mode"), std::string::npos) << random.status().message();
}

// With every input known at load (shape arithmetic) ScatterND, ScatterElements, GatherND and
// CumSum fold on the host: a shape edited by them is a constant shape.
TEST_F(OnnxEngineTest, ScatterGatherNDAndCumSumOfShapesFoldOnTheHost) {
  Node mul = node("ScatterElements", {"s1", "first", "three"}, {"s2"});
  mul.attributes.push_back(string_attribute("reduction", "mul"));
  Node sum = node("CumSum", {"picked", "zero"}, {"dims"});
  std::vector<Node> nodes{node("Shape", {"x"}, {"s"}),                          // [2, 3, 4]
                          node("ScatterND", {"s", "last", "six"}, {"s1"}),      // [2, 3, 6]
                          mul,                                                  // [6, 3, 6]
                          node("GatherND", {"s2", "third_first"}, {"picked"}),  // [6, 6]
                          sum,                                                  // [6, 12]
                          node("ConstantOfShape", {"dims"}, {"y"})};
  Model m =
      model_of(std::move(nodes), {info("x", ElemType::kFloat, {2, 3, 4})}, {info("y", ElemType::kFloat, {-1, -1})});
  m.opsets[""] = 16;
  const auto constant = [&](const char* name, std::vector<int64_t> dims, std::vector<int64_t> v) {
    m.graph.initializers.push_back(make_int64_tensor(std::move(dims), v));
    m.graph.initializers.back().name = name;
  };
  constant("last", {1, 1}, {-1});
  constant("six", {1}, {6});
  constant("first", {1}, {0});
  constant("three", {1}, {3});
  constant("third_first", {2, 1}, {2, -3});
  constant("zero", {}, {0});
  Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), std::move(m));
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const std::vector<HostTensor> x{float_tensor({2, 3, 4}, std::vector<float>(24, 1.0f))};
  Result<CompiledGraph*> graph = (*engine)->compiled(x);
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  EXPECT_EQ((*graph)->folded_nodes, 5u) << "every node after Shape";
  Result<std::vector<HostTensor>> r = (*engine)->run(x);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (std::vector<int64_t>{6, 12}));
}

// Each refusal names the op: a reduction the opset lacks (at load), float indices, a reduction of
// bool data, CumSum's axis computed at run time.
TEST_F(OnnxEngineTest, ScatterGatherAndCumSumRefusalsNameTheOp) {
  Node max16 = node("ScatterElements", {"data", "indices", "updates"}, {"y"}, "sc");
  max16.attributes.push_back(string_attribute("reduction", "max"));
  Model m16 = model_of({max16},
                       {info("data", ElemType::kFloat, {4}), info("indices", ElemType::kInt64, {2}),
                        info("updates", ElemType::kFloat, {2})},
                       {info("y", ElemType::kFloat, {4})});
  m16.opsets[""] = 16;
  Result<std::unique_ptr<Engine>> load = Engine::from_model(rt(), m16);
  ASSERT_FALSE(load.is_ok());
  EXPECT_NE(load.status().message().find("ScatterElements 'sc'"), std::string::npos) << load.status().message();
  EXPECT_NE(load.status().message().find("reduction 'max'"), std::string::npos) << load.status().message();

  const auto refusal = [&](Model m, std::vector<HostTensor> inputs, const std::string& names) {
    Result<std::vector<HostTensor>> y = run_model(m, DType::kF32, inputs);
    ASSERT_FALSE(y.is_ok()) << names;
    EXPECT_NE(y.status().message().find(names), std::string::npos) << y.status().message();
  };
  refusal(model_of({node("GatherND", {"data", "indices"}, {"y"}, "g")},
                   {info("data", ElemType::kFloat, {4, 2}), info("indices", ElemType::kFloat, {3, 1})},
                   {info("y", ElemType::kFloat, {3, 2})}),
          {float_tensor({4, 2}, std::vector<float>(8, 1.0f)), float_tensor({3, 1}, {0.0f, 1.0f, 2.0f})},
          "GatherND 'g'");
  Node add = node("ScatterElements", {"data", "indices", "updates"}, {"y"}, "b");
  add.attributes.push_back(string_attribute("reduction", "add"));
  Model bools = model_of({add},
                         {info("data", ElemType::kBool, {4}), info("indices", ElemType::kInt64, {2}),
                          info("updates", ElemType::kBool, {2})},
                         {info("y", ElemType::kBool, {4})});
  bools.opsets[""] = 16;
  refusal(bools,
          {doubles_as(ElemType::kBool, {4}, {1, 0, 1, 0}), make_int64_tensor({2}, std::vector<int64_t>{0, 1}),
           doubles_as(ElemType::kBool, {2}, {1, 1})},
          "ScatterElements 'b'");
  Node cast = node("Cast", {"f"}, {"axis"});
  cast.attributes.push_back(int_attribute("to", static_cast<int64_t>(ElemType::kInt64)));
  refusal(model_of({cast, node("CumSum", {"x", "axis"}, {"y"}, "c")},
                   {info("x", ElemType::kFloat, {2, 3}), info("f", ElemType::kFloat, {})},
                   {info("y", ElemType::kFloat, {2, 3})}),
          {float_tensor({2, 3}, std::vector<float>(6, 1.0f)), float_tensor({}, {1.0f})}, "CumSum 'c'");
}

}  // namespace
}  // namespace recon::gpu::onnx
