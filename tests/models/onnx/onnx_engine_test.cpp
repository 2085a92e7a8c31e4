// The ONNX engine end to end: models exported by PyTorch (make_torch_models.py, run at build
// time) against torch's own CPU outputs in fp32 and fp16, several batch sizes of one dynamic
// model, and the refusals: unsupported nodes all named at load, cycles, inputs of the wrong type or
// shape; a failed compile gives back every pooled byte; activations share memory by liveness.
#include "gpu/models/onnx/onnx_engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gpu/models/onnx/onnx_host.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/models/onnx/onnx_engine_test_util.h"
#include "tools/io/npy.h"

namespace recon::gpu::onnx {
namespace {

namespace fs = std::filesystem;

// A float32 or bool .npy file as a tensor.
HostTensor from_npy(const fs::path& path) {
  Result<io::NpyArray> a = io::read_npy_file(path.string());
  EXPECT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_TRUE(a->descr == "<f4" || a->descr == "|b1") << path << ": " << a->descr;
  return HostTensor::owned(a->descr == "|b1" ? ElemType::kBool : ElemType::kFloat, a->shape, a->data);
}

// max |got − want| / (max |want| + 1e-6) over all elements.
double relative_error(const HostTensor& got, const HostTensor& want) {
  EXPECT_EQ(got.dims, want.dims);
  const auto g = got.values<float>(), w = want.values<float>();
  double worst = 0, scale = 1e-6;
  for (size_t i = 0; i < w.size(); ++i) scale = std::max(scale, double(std::abs(w[i])));
  for (size_t i = 0; i < w.size() && i < g.size(); ++i) worst = std::max(worst, std::abs(double(g[i]) - w[i]));
  return worst / scale;
}

HostTensor floats(std::vector<int64_t> dims, float value) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * 4);
  for (int64_t i = 0; i < n; ++i) std::memcpy(bytes.data() + i * 4, &value, 4);
  return HostTensor::owned(ElemType::kFloat, std::move(dims), std::move(bytes));
}

class OnnxTorchModelTest : public OnnxEngineTest, public ::testing::WithParamInterface<std::string> {};

// fp32-split (fp32 GEMMs on tensor cores as fp16 parts) runs the scalar path where the device has
// no tensor cores (lavapipe), and its own within 1e-3 where it has them. fp32 runs both layouts
// (onnx_channels_last.h), whatever the device; fp16 and fp32-split the device's default.
TEST_P(OnnxTorchModelTest, MatchesTorchOnTheCpuAtEveryBatchSizeInFp32Fp32SplitAndFp16) {
  const fs::path dir = fs::path(RECON_ONNX_TORCH_MODELS) / GetParam();
  ASSERT_TRUE(fs::exists(dir / "model.onnx")) << dir;
  struct Mode {
    const char* name;
    EngineOptions options;
    double tolerance;
  };
  const Mode modes[] = {{"fp32", {DType::kF32, false, EngineOptions::Layout::kNchw}, 2e-5},
                        {"fp32 channels-last", {DType::kF32, false, EngineOptions::Layout::kChannelsLast}, 2e-5},
                        {"fp32-split", {DType::kF32, /*fp32_split=*/true}, 1e-3},
                        {"fp16", {DType::kF16}, 2e-2}};
  for (const Mode& mode : modes) {
    Result<std::unique_ptr<Engine>> engine = Engine::load(rt(), (dir / "model.onnx").string(), mode.options);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    size_t sets = 0;
    for (int k = 0; fs::exists(dir / ("input_" + std::to_string(k) + ".npy")); ++k, ++sets) {
      const HostTensor x = from_npy(dir / ("input_" + std::to_string(k) + ".npy"));
      const HostTensor want = from_npy(dir / ("expected_" + std::to_string(k) + ".npy"));
      Result<std::vector<HostTensor>> got = (*engine)->run(std::span<const HostTensor>(&x, 1));
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      ASSERT_EQ(got->size(), 1u);
      const double err = relative_error((*got)[0], want);
      std::printf("%s %s batch %lld: max error %.3g of max |torch|\n", GetParam().c_str(), mode.name,
                  static_cast<long long>(x.dims[0]), err);
      EXPECT_LE(err, mode.tolerance) << GetParam() << " " << mode.name << " set " << k;
    }
    EXPECT_EQ((*engine)->compiled_count(), sets) << "one compiled graph per batch size";
  }
}

INSTANTIATE_TEST_SUITE_P(Exported, OnnxTorchModelTest,
                         ::testing::Values("resnet_small", "vit_small", "mlp", "mobile_small", "recurrent"));

// The masked attention export (make_torch_models.py): a bool mask input, comparisons, And, Not and
// Where on run-time values (the causal mask of positions folds at load), a bool output, at two
// batch sizes, against torch on the CPU. In fp16, only outputs within 1e-3 of zero may change sign.
TEST_F(OnnxEngineTest, AMaskedAttentionExportMatchesTorchInFp32AndFp16) {
  const fs::path dir = fs::path(RECON_ONNX_TORCH_MODELS) / "masked";
  for (const auto& [precision, tolerance] : {std::pair{DType::kF32, 2e-5}, std::pair{DType::kF16, 2e-3}}) {
    Result<std::unique_ptr<Engine>> engine = Engine::load(rt(), (dir / "model.onnx").string(), {precision});
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    for (int k = 0; k < 2; ++k) {
      const auto file = [&](const char* name) { return dir / (std::string(name) + "_" + std::to_string(k) + ".npy"); };
      const std::vector<HostTensor> inputs{from_npy(file("x")), from_npy(file("mask"))};
      ASSERT_EQ(inputs[1].type, ElemType::kBool);
      const HostTensor want_y = from_npy(file("y")), want_positive = from_npy(file("positive"));
      Result<std::vector<HostTensor>> got = (*engine)->run(inputs);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      ASSERT_EQ(got->size(), 2u);
      const double err = relative_error((*got)[0], want_y);
      std::printf("masked %s batch %lld: max error %.3g of max |torch|\n", dtype_name(precision),
                  static_cast<long long>(inputs[0].dims[0]), err);
      EXPECT_LE(err, tolerance) << dtype_name(precision) << " set " << k;
      const HostTensor& positive = (*got)[1];
      ASSERT_EQ(positive.type, ElemType::kBool);
      ASSERT_EQ(positive.dims, want_positive.dims);
      const auto g = positive.values<uint8_t>(), w = want_positive.values<uint8_t>();
      const auto y = want_y.values<float>();
      for (size_t i = 0; i < w.size(); ++i) {
        if (precision == DType::kF16 && std::abs(y[i]) < 1e-3f) continue;
        EXPECT_EQ(g[i], w[i]) << dtype_name(precision) << " set " << k << " element " << i << " (torch's y " << y[i]
                              << ")";
      }
    }
  }
}

TEST_F(OnnxEngineTest, TheResNetsResidualsAndActivationsFuseIntoItsConvolutions) {
  Result<std::unique_ptr<Engine>> engine =
      Engine::load(rt(), (fs::path(RECON_ONNX_TORCH_MODELS) / "resnet_small" / "model.onnx").string());
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const FusionCounts& f = (*engine)->fused();
  std::printf("fused: %zu batch norms, %zu residuals, %zu activations, %zu biases\n", f.batch_norms, f.residuals,
              f.activations, f.biases);
  // torch's exporter folds BatchNorm itself in eval mode, so the rewrites that matter are the
  // residual add of each block (3), the ReLU after each first convolution and the stem (4) and the
  // ReLU after each block's sum (3, residual first).
  EXPECT_EQ(f.residuals, 3u);
  EXPECT_EQ(f.activations, 7u);
}

// The channels-last rewrite (onnx_channels_last.h) takes the whole ResNet: its nine convolutions,
// the max pool and the global average pool. The stem reads the 3-channel NCHW input as it is, and
// one transpose leaves the layout (the pooled features). The MobileNet-like export keeps its
// grouped and dilated convolutions NCHW and converts the rest. Both match torch
// (OnnxTorchModelTest).
TEST_F(OnnxEngineTest, TheResNetRunsChannelsLastFromItsInputToOneTransposeOut) {
  EngineOptions options{DType::kF32, false, EngineOptions::Layout::kChannelsLast};
  Result<std::unique_ptr<Engine>> engine =
      Engine::load(rt(), (fs::path(RECON_ONNX_TORCH_MODELS) / "resnet_small" / "model.onnx").string(), options);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const ChannelsLastCounts& c = (*engine)->channels_last();
  EXPECT_EQ(c.convolutions, 9u);
  EXPECT_EQ(c.pools, 2u);
  EXPECT_EQ(c.transposes, 1u);
  EXPECT_EQ(c.planar_inputs, 1u);
  size_t transposes = 0, converted = 0, weights = 0;
  for (const Node& n : (*engine)->model().graph.nodes) {
    transposes += n.op_type == "Transpose";
    converted += n.domain == kChannelsLastDomain;
  }
  for (const HostTensor& t : (*engine)->model().graph.initializers) {
    weights += t.dims.size() == 4;
    if (t.dims.size() == 4) {
      EXPECT_EQ(t.name.rfind(kChannelsLastPrefix, 0), 0u) << t.name << " kept in NCHW too";
    }
  }
  EXPECT_EQ(transposes, 1u);
  EXPECT_EQ(converted, 11u);
  EXPECT_EQ(weights, 9u);

  Result<std::unique_ptr<Engine>> mobile =
      Engine::load(rt(), (fs::path(RECON_ONNX_TORCH_MODELS) / "mobile_small" / "model.onnx").string(), options);
  ASSERT_TRUE(mobile.is_ok()) << mobile.status().to_string();
  const ChannelsLastCounts& m = (*mobile)->channels_last();
  std::printf("mobile_small channels-last: %zu convolutions, %zu pools, %zu element-wise, %zu transposes\n",
              m.convolutions, m.pools, m.elementwise, m.transposes);
  EXPECT_EQ(m.convolutions, 3u) << "the stem, the pointwise and the head convolution; not the grouped ones";
  EXPECT_GE(m.transposes, 4u);
  EngineOptions nchw = options;
  nchw.layout = EngineOptions::Layout::kNchw;
  Result<std::unique_ptr<Engine>> planar =
      Engine::load(rt(), (fs::path(RECON_ONNX_TORCH_MODELS) / "resnet_small" / "model.onnx").string(), nchw);
  ASSERT_TRUE(planar.is_ok());
  EXPECT_EQ((*planar)->channels_last().convolutions, 0u);
}

// A Conv whose weights arrive at run time (a graph input) converts too: its weights are permuted on
// the device every run. Both layouts give the same numbers.
TEST_F(OnnxEngineTest, AConvolutionOfRunTimeWeightsRunsChannelsLastAsItRunsNchw) {
  Node conv = node("Conv", {"x", "w"}, {"y"});
  conv.attributes = {ints_attribute("kernel_shape", {3, 3}), ints_attribute("pads", {1, 1, 1, 1})};
  Node pool = node("MaxPool", {"y"}, {"z"});
  pool.attributes = {ints_attribute("kernel_shape", {2, 2}), ints_attribute("strides", {2, 2})};
  const Model m = model_of({conv, pool, node("Relu", {"z"}, {"r"})},
                           {info("x", ElemType::kFloat, {2, 9, 6, 7}), info("w", ElemType::kFloat, {4, 9, 3, 3})},
                           {info("r", ElemType::kFloat, {2, 4, 3, 3})});
  const std::vector<HostTensor> inputs = {float_tensor({2, 9, 6, 7}, testing::random_floats(2 * 9 * 6 * 7, 1)),
                                          float_tensor({4, 9, 3, 3}, testing::random_floats(4 * 9 * 3 * 3, 2))};
  std::vector<std::vector<float>> outs;
  for (const auto layout : {EngineOptions::Layout::kNchw, EngineOptions::Layout::kChannelsLast}) {
    EngineOptions options{DType::kF32, false, layout};
    Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), m, options);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    EXPECT_EQ((*engine)->channels_last().convolutions, layout == EngineOptions::Layout::kNchw ? 0u : 1u);
    for (int run = 0; run < 2; ++run) {  // the permuted weights are the run's own
      Result<std::vector<HostTensor>> got = (*engine)->run(inputs);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      const auto v = (*got)[0].values<float>();
      if (run == 0) outs.emplace_back(v.begin(), v.end());
    }
  }
  ASSERT_EQ(outs[0].size(), outs[1].size());
  for (size_t i = 0; i < outs[0].size(); ++i) EXPECT_NEAR(outs[0][i], outs[1][i], 1e-5) << i;
}

// Conv → BatchNormalization folds into the convolution; with an Identity between them it cannot,
// and the BatchNormalization op runs: both give the same numbers.
TEST_F(OnnxEngineTest, AFoldedBatchNormGivesWhatTheBatchNormOpGives) {
  auto make = [](bool separate) {
    std::vector<Node> nodes;
    nodes.push_back(node("Conv", {"x", "w", "b"}, {separate ? "c0" : "c"}));
    if (separate) nodes.push_back(node("Identity", {"c0"}, {"c"}));
    Node bn = node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"});
    Attribute eps;
    eps.name = "epsilon";
    eps.kind = Attribute::Kind::kFloat;
    eps.f = 1e-3f;
    bn.attributes.push_back(eps);
    nodes.push_back(bn);
    Model m = model_of(std::move(nodes), {info("x", ElemType::kFloat, {2, 3, 9, 7})},
                       {info("y", ElemType::kFloat, {2, 5, 9, 7})});
    std::vector<float> w(5 * 3 * 3 * 3), per_channel(5);
    for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(float(i)) * 0.3f;
    auto add = [&](const std::string& name, std::vector<int64_t> dims, const std::vector<float>& v) {
      std::vector<uint8_t> bytes(v.size() * 4);
      std::memcpy(bytes.data(), v.data(), bytes.size());
      m.graph.initializers.push_back(HostTensor::owned(ElemType::kFloat, std::move(dims), std::move(bytes), name));
    };
    add("w", {5, 3, 3, 3}, w);
    add("b", {5}, {0.1f, -0.2f, 0.3f, 0.0f, 0.5f});
    add("scale", {5}, {1.5f, 0.5f, 2.0f, 1.0f, 0.8f});
    add("shift", {5}, {0.0f, 0.3f, -0.4f, 0.2f, 0.1f});
    add("mean", {5}, {0.2f, -0.1f, 0.0f, 0.5f, -0.3f});
    add("var", {5}, {0.5f, 1.5f, 0.2f, 1.0f, 3.0f});
    return m;
  };
  Result<std::unique_ptr<Engine>> folded = Engine::from_model(rt(), make(false));
  Result<std::unique_ptr<Engine>> separate = Engine::from_model(rt(), make(true));
  ASSERT_TRUE(folded.is_ok()) << folded.status().to_string();
  ASSERT_TRUE(separate.is_ok()) << separate.status().to_string();
  EXPECT_EQ((*folded)->fused().batch_norms, 1u);
  EXPECT_EQ((*separate)->fused().batch_norms, 0u);
  std::vector<float> xv(2 * 3 * 9 * 7);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::cos(float(i) * 0.37f);
  const HostTensor x = float_tensor({2, 3, 9, 7}, xv);
  Result<std::vector<HostTensor>> a = (*folded)->run(std::span<const HostTensor>(&x, 1));
  Result<std::vector<HostTensor>> b = (*separate)->run(std::span<const HostTensor>(&x, 1));
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_LE(relative_error((*a)[0], (*b)[0]), 1e-6);
}

TEST_F(OnnxEngineTest, TheViTsShapeArithmeticFoldsAtCompileTimeAndItsLinearBiasesFuse) {
  Result<std::unique_ptr<Engine>> engine =
      Engine::load(rt(), (fs::path(RECON_ONNX_TORCH_MODELS) / "vit_small" / "model.onnx").string());
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const HostTensor x = floats({2, 3, 16, 16}, 0.5f);
  Result<CompiledGraph*> graph = (*engine)->compiled(std::span<const HostTensor>(&x, 1));
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  EXPECT_GT((*graph)->folded_nodes, 10u) << "Shape, Gather, Unsqueeze, Concat... of the exported reshapes";
  EXPECT_EQ((*engine)->fused().biases, 8u) << "qkv, proj and two MLP linears per block, exported as MatMul + Add";
}

TEST_F(OnnxEngineTest, EveryUnsupportedNodeIsNamedInOneErrorAtLoad) {
  Node grouped = node("ConvTranspose", {"x", "w"}, {"c"}, "grouped");
  Attribute group;
  group.name = "group";
  group.kind = Attribute::Kind::kInt;
  group.i = 2;
  grouped.attributes.push_back(group);
  Model m = model_of({node("Relu", {"x"}, {"r"}), grouped, node("FancyOp", {"r"}, {"y"}, "fancy")},
                     {info("x", ElemType::kFloat, {1, 4, 8, 8})}, {info("y", ElemType::kFloat, {1, 4, 8, 8})});
  m.graph.initializers.push_back(floats({4, 2, 3, 3}, 0.1f));
  m.graph.initializers.back().name = "w";
  Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), std::move(m));
  ASSERT_FALSE(engine.is_ok());
  const std::string msg = engine.status().message();
  EXPECT_EQ(engine.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(msg.find("2 node(s)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ConvTranspose 'grouped'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("group"), std::string::npos) << msg;
  EXPECT_NE(msg.find("FancyOp 'fancy'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("Relu"), std::string::npos) << msg;
}

// Opset 6's Add broadcasts only where the node says so, B along A from `axis` (here the channel
// axis, which numpy's rule alone would not give); without `broadcast` the shapes must be equal.
// Its BatchNormalization runs only in test mode (is_test = 1).
TEST_F(OnnxEngineTest, OpsetSixBroadcastsOnlyWhereTheNodeSaysAlongItsAxis) {
  auto add_model = [](std::vector<Attribute> attributes) {
    Node add = node("Add", {"x", "b"}, {"y"}, "legacy");
    add.attributes = std::move(attributes);
    Model m = model_of({add}, {info("x", ElemType::kFloat, {2, 3, 4})}, {info("y", ElemType::kFloat, {2, 3, 4})});
    m.opsets[""] = 6;
    std::vector<uint8_t> bytes(3 * 4);
    const float b[3] = {10.0f, 20.0f, 30.0f};
    std::memcpy(bytes.data(), b, bytes.size());
    m.graph.initializers.push_back(HostTensor::owned(ElemType::kFloat, {3}, std::move(bytes), "b"));
    return m;
  };
  std::vector<float> xv(2 * 3 * 4);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = float(i);
  const HostTensor x = float_tensor({2, 3, 4}, xv);

  Result<std::unique_ptr<Engine>> along =
      Engine::from_model(rt(), add_model({int_attribute("broadcast", 1), int_attribute("axis", 1)}));
  ASSERT_TRUE(along.is_ok()) << along.status().to_string();
  Result<std::vector<HostTensor>> y = (*along)->run(std::span<const HostTensor>(&x, 1));
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  const auto got = (*y)[0].values<float>();
  ASSERT_EQ(got.size(), xv.size());
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_EQ(got[i], xv[i] + 10.0f * float(1 + (i / 4) % 3)) << i;

  Result<std::unique_ptr<Engine>> unasked = Engine::from_model(rt(), add_model({}));
  Result<std::vector<HostTensor>> refused =
      unasked ? (*unasked)->run(std::span<const HostTensor>(&x, 1)) : Result<std::vector<HostTensor>>(unasked.status());
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("broadcast = 1"), std::string::npos) << refused.status().message();

  Node bn = node("BatchNormalization", {"x", "s", "s", "s", "s"}, {"y"}, "training");
  Model m = model_of({bn}, {info("x", ElemType::kFloat, {2, 3, 4})}, {info("y", ElemType::kFloat, {2, 3, 4})});
  m.opsets[""] = 6;
  m.graph.initializers.push_back(floats({3}, 1.0f));
  m.graph.initializers.back().name = "s";
  Result<std::unique_ptr<Engine>> training = Engine::from_model(rt(), std::move(m));
  ASSERT_FALSE(training.is_ok());
  EXPECT_NE(training.status().message().find("is_test = 0"), std::string::npos) << training.status().message();
}

TEST_F(OnnxEngineTest, ACycleIsRefusedNamingTheNode) {
  Model m = model_of({node("Relu", {"b"}, {"a"}, "first"), node("Relu", {"a"}, {"b"}, "second")},
                     {info("x", ElemType::kFloat, {4})}, {info("b", ElemType::kFloat, {4})});
  Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), std::move(m));
  ASSERT_FALSE(engine.is_ok());
  EXPECT_NE(engine.status().message().find("Relu 'first'"), std::string::npos) << engine.status().message();
  EXPECT_NE(engine.status().message().find("topological"), std::string::npos) << engine.status().message();
}

TEST_F(OnnxEngineTest, InputsOfTheWrongTypeShapeOrCountAreRefused) {
  Model m = model_of({node("Relu", {"x"}, {"y"})}, {info("x", ElemType::kFloat, {-1, 4})},
                     {info("y", ElemType::kFloat, {-1, 4})});
  Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), std::move(m));
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const HostTensor good = floats({3, 4}, -1.0f);
  ASSERT_TRUE((*engine)->run(std::span<const HostTensor>(&good, 1)).is_ok());
  const HostTensor wrong_shape = floats({3, 5}, 1.0f);
  Result<std::vector<HostTensor>> r = (*engine)->run(std::span<const HostTensor>(&wrong_shape, 1));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("[-1,4]"), std::string::npos) << r.status().message();
  HostTensor wrong_type = good;
  wrong_type.type = ElemType::kInt32;
  r = (*engine)->run(std::span<const HostTensor>(&wrong_type, 1));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("must be FLOAT"), std::string::npos) << r.status().message();
  r = (*engine)->run({});
  ASSERT_FALSE(r.is_ok());
  // The engine still serves a good request afterwards.
  r = (*engine)->run(std::span<const HostTensor>(&good, 1));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].values<float>()[0], 0.0f);
}

TEST_F(OnnxEngineTest, AFailedCompileGivesBackEveryPooledByte) {
  // Relu and a weight upload succeed, then the MatMul's shapes disagree.
  Model m = model_of({node("Relu", {"x"}, {"r"}), node("MatMul", {"r", "w"}, {"y"}, "bad")},
                     {info("x", ElemType::kFloat, {64, 32})}, {info("y", ElemType::kFloat, {64, 16})});
  m.graph.initializers.push_back(floats({48, 16}, 0.5f));
  m.graph.initializers.back().name = "w";
  const uint64_t activations = rt().pool(MemoryRole::kActivations).stats().in_use_bytes;
  const uint64_t weights = rt().pool(MemoryRole::kWeights).stats().in_use_bytes;
  Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), std::move(m));
  ASSERT_FALSE(engine.is_ok());
  EXPECT_NE(engine.status().message().find("MatMul 'bad'"), std::string::npos) << engine.status().message();
  EXPECT_EQ(rt().pool(MemoryRole::kActivations).stats().in_use_bytes, activations);
  EXPECT_EQ(rt().pool(MemoryRole::kWeights).stats().in_use_bytes, weights);
}

// The graphs an engine compiles for its input shapes share one device copy of the weights: a
// second batch size adds activations, not another copy of every initializer.
TEST_F(OnnxEngineTest, GraphsOfEveryBatchSizeShareOneCopyOfTheWeights) {
  Model m = model_of({node("MatMul", {"x", "w"}, {"y"})}, {info("x", ElemType::kFloat, {-1, 256})},
                     {info("y", ElemType::kFloat, {-1, 64})});
  m.graph.initializers.push_back(floats({256, 64}, 0.25f));
  m.graph.initializers.back().name = "w";
  Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), std::move(m));
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  BufferPool& weights = rt().pool(MemoryRole::kWeights);
  uint64_t after_first = 0;
  for (int64_t batch : {2, 5, 2}) {
    const HostTensor x = floats({batch, 256}, 1.0f);
    Result<std::vector<HostTensor>> y = (*engine)->run(std::span<const HostTensor>(&x, 1));
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    for (float v : (*y)[0].values<float>()) ASSERT_EQ(v, 64.0f);  // 256 · 1 · 0.25
    if (after_first == 0) after_first = weights.stats().in_use_bytes;
    EXPECT_EQ(weights.stats().in_use_bytes, after_first) << "batch " << batch;
  }
  EXPECT_EQ((*engine)->compiled_count(), 2u);
}

// ConvTranspose by its definition: every input element spreads its kernel, taps `dilation` apart,
// over the output from (i·stride − pad_begin), per axis; x [N, Cin, H, W], w [Cin, Cout, KH, KW].
std::vector<double> conv_transpose_reference(const std::vector<float>& x, const Shape& xs, const std::vector<float>& w,
                                             const Shape& ws, std::array<int64_t, 2> stride,
                                             std::array<int64_t, 2> pad_begin, std::array<int64_t, 2> out,
                                             std::array<int64_t, 2> dilation = {1, 1}) {
  const int64_t n = xs[0], cin = xs[1], h = xs[2], wd = xs[3], cout = ws[1], kh = ws[2], kw = ws[3];
  std::vector<double> y(static_cast<size_t>(n * cout * out[0] * out[1]), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ci = 0; ci < cin; ++ci)
      for (int64_t iy = 0; iy < h; ++iy)
        for (int64_t ix = 0; ix < wd; ++ix)
          for (int64_t co = 0; co < cout; ++co)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t oy = iy * stride[0] + ky * dilation[0] - pad_begin[0];
                const int64_t ox = ix * stride[1] + kx * dilation[1] - pad_begin[1];
                if (oy < 0 || oy >= out[0] || ox < 0 || ox >= out[1]) continue;
                y[static_cast<size_t>(((b * cout + co) * out[0] + oy) * out[1] + ox)] +=
                    double(x[static_cast<size_t>(((b * cin + ci) * h + iy) * wd + ix)]) *
                    w[static_cast<size_t>(((ci * cout + co) * kh + ky) * kw + kx)];
              }
  return y;
}

// Transposed convolutions that are not stride == kernel: strides, pads, output_padding, output_shape
// (one past the full output), SAME_UPPER, dilations and 1-D ones, each against the definition, with
// the weights an initializer (flipped on the host) and a graph input (flipped on the device).
TEST_F(OnnxEngineTest, TransposedConvolutionsOfAnyStrideAndPaddingMatchTheirDefinition) {
  struct Case {
    const char* what;
    Shape x, w;
    std::vector<Attribute> attributes;
    std::array<int64_t, 2> stride, pad_begin, out;
    std::array<int64_t, 2> dilation{1, 1};
  };
  const Case cases[] = {
      {"stride 2, pads 1",
       {1, 3, 5, 4},
       {3, 2, 4, 4},
       {ints_attribute("strides", {2, 2}), ints_attribute("pads", {1, 1, 1, 1})},
       {2, 2},
       {1, 1},
       {10, 8}},
      {"stride (3, 2), output_padding, uneven pads",
       {2, 2, 3, 4},
       {2, 3, 3, 2},
       {ints_attribute("strides", {3, 2}), ints_attribute("pads", {0, 1, 2, 0}),
        ints_attribute("output_padding", {1, 1})},
       {3, 2},
       {0, 1},
       {8, 8}},
      {"output_shape",
       {1, 2, 4, 4},
       {2, 2, 3, 3},
       {ints_attribute("strides", {2, 2}), ints_attribute("output_shape", {8, 8})},
       {2, 2},
       {1, 1},
       {8, 8}},
      {"output_shape beyond the full output (zeros after)",
       {1, 1, 3, 3},
       {1, 2, 3, 3},
       {ints_attribute("strides", {3, 2}), ints_attribute("output_shape", {10, 8})},
       {3, 2},
       {0, 0},
       {10, 8}},
      {"SAME_UPPER",
       {1, 1, 3, 3},
       {1, 2, 3, 3},
       {ints_attribute("strides", {2, 2}), string_attribute("auto_pad", "SAME_UPPER")},
       {2, 2},
       {0, 0},
       {6, 6}},
      {"1-D, stride 2, pads 2",
       {1, 2, 6},
       {2, 3, 5},
       {ints_attribute("strides", {2}), ints_attribute("pads", {2, 2})},
       {1, 2},
       {0, 2},
       {1, 11}},
      {"dilations (2, 3), stride 2, uneven pads",
       {1, 2, 4, 3},
       {2, 3, 3, 2},
       {ints_attribute("strides", {2, 2}), ints_attribute("dilations", {2, 3}), ints_attribute("pads", {1, 0, 0, 2})},
       {2, 2},
       {1, 0},
       {10, 6},
       {2, 3}},
      {"dilations 2, stride = kernel",
       {1, 1, 3, 3},
       {1, 2, 2, 2},
       {ints_attribute("strides", {2, 2}), ints_attribute("dilations", {2, 2})},
       {2, 2},
       {0, 0},
       {7, 7},
       {2, 2}},
      {"1-D, dilation 2", {1, 2, 5}, {2, 1, 3}, {ints_attribute("dilations", {2})}, {1, 1}, {0, 0}, {1, 9}, {1, 2}},
  };
  for (const Case& c : cases) {
    for (bool runtime_w : {false, true}) {
      const bool one_d = c.x.size() == 3;
      Node ct = node("ConvTranspose", {"x", "w"}, {"y"}, c.what);
      ct.attributes = c.attributes;
      const Shape y_shape = one_d ? Shape{c.x[0], c.w[1], c.out[1]} : Shape{c.x[0], c.w[1], c.out[0], c.out[1]};
      std::vector<ValueInfo> inputs{info("x", ElemType::kFloat, c.x)};
      if (runtime_w) inputs.push_back(info("w", ElemType::kFloat, c.w));
      Model m = model_of({ct}, inputs, {info("y", ElemType::kFloat, y_shape)});
      std::vector<float> wv(static_cast<size_t>(shape_numel(c.w))), xv(static_cast<size_t>(shape_numel(c.x)));
      for (size_t i = 0; i < wv.size(); ++i) wv[i] = std::sin(float(i) * 0.7f);
      for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::cos(float(i) * 0.31f);
      if (!runtime_w) m.graph.initializers.push_back(float_tensor(c.w, wv, "w"));
      Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), std::move(m));
      ASSERT_TRUE(engine.is_ok()) << c.what << ": " << engine.status().to_string();
      const std::vector<HostTensor> feeds{float_tensor(c.x, xv), float_tensor(c.w, wv)};
      Result<std::vector<HostTensor>> y = (*engine)->run(std::span<const HostTensor>(feeds.data(), runtime_w ? 2 : 1));
      ASSERT_TRUE(y.is_ok()) << c.what << ": " << y.status().to_string();
      ASSERT_EQ((*y)[0].dims, y_shape) << c.what;
      const Shape xs4 = one_d ? Shape{c.x[0], c.x[1], 1, c.x[2]} : c.x;
      const Shape ws4 = one_d ? Shape{c.w[0], c.w[1], 1, c.w[2]} : c.w;
      const std::vector<double> want =
          conv_transpose_reference(xv, xs4, wv, ws4, c.stride, c.pad_begin, c.out, c.dilation);
      const auto got = (*y)[0].values<float>();
      ASSERT_EQ(got.size(), want.size()) << c.what;
      double worst = 0;
      for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
      EXPECT_LE(worst, 1e-5) << c.what << (runtime_w ? ", run-time weights" : "");
    }
  }
}

// ConvTranspose's general path runs on a flipped copy of its kernel: one copy per model too, however
// many batch sizes compile, and each batch still equals the definition.
TEST_F(OnnxEngineTest, TransposedConvolutionGraphsShareOneFlippedKernel) {
  const Shape ws{3, 2, 3, 3};
  Node ct = node("ConvTranspose", {"x", "w"}, {"y"});
  ct.attributes = {ints_attribute("strides", {2, 2}), ints_attribute("pads", {1, 1, 1, 1})};
  Model m = model_of({ct}, {info("x", ElemType::kFloat, {-1, 3, 4, 5})}, {info("y", ElemType::kFloat, {-1, 2, 7, 9})});
  std::vector<float> wv(static_cast<size_t>(shape_numel(ws)));
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = std::sin(float(i) * 0.7f);
  m.graph.initializers.push_back(float_tensor(ws, wv, "w"));
  Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), std::move(m));
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  BufferPool& weights = rt().pool(MemoryRole::kWeights);
  uint64_t after_first = 0;
  for (int64_t batch : {2, 5, 2}) {
    const Shape xs{batch, 3, 4, 5};
    std::vector<float> xv(static_cast<size_t>(shape_numel(xs)));
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::cos(float(i) * 0.31f);
    const HostTensor x = float_tensor(xs, xv);
    Result<std::vector<HostTensor>> y = (*engine)->run(std::span<const HostTensor>(&x, 1));
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    const std::vector<double> want = conv_transpose_reference(xv, xs, wv, ws, {2, 2}, {1, 1}, {7, 9});
    const auto got = (*y)[0].values<float>();
    ASSERT_EQ(got.size(), want.size()) << "batch " << batch;
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5) << "batch " << batch << ", " << i;
    if (after_first == 0) after_first = weights.stats().in_use_bytes;
    EXPECT_EQ(weights.stats().in_use_bytes, after_first) << "batch " << batch;
  }
  EXPECT_EQ((*engine)->compiled_count(), 2u);
}

// A shape tensor is a graph input whose values decide shapes: each value set compiles its own
// graph (the least recently used dropped beyond EngineOptions::max_compiled_graphs), and one that would make the
// host fold a huge tensor is refused, not allocated.
TEST_F(OnnxEngineTest, ShapeTensorInputsKeyTheGraphAndHugeFoldsAreRefused) {
  Node fill = node("ConstantOfShape", {"shape"}, {"y"});
  Model m = model_of({fill}, {info("shape", ElemType::kInt64, {2})}, {info("y", ElemType::kFloat, {-1, -1})});
  Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), std::move(m));
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  ASSERT_TRUE((*engine)->is_shape_tensor(0));
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{2, 3}, std::vector<int64_t>{4, 1}}) {
    const HostTensor shape = make_int64_tensor({2}, dims);
    Result<std::vector<HostTensor>> r = (*engine)->run(std::span<const HostTensor>(&shape, 1));
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ((*r)[0].dims, dims);
  }
  EXPECT_EQ((*engine)->compiled_count(), 2u);
  // Ever new shapes keep at most max_compiled_graphs graphs.
  for (int64_t n = 1; n <= 12; ++n) {
    const HostTensor shape = make_int64_tensor({2}, std::vector<int64_t>{n, 2});
    ASSERT_TRUE((*engine)->run(std::span<const HostTensor>(&shape, 1)).is_ok());
  }
  EXPECT_EQ((*engine)->compiled_count(), EngineOptions{}.max_compiled_graphs);
  const HostTensor huge = make_int64_tensor({2}, std::vector<int64_t>{int64_t{1} << 14, int64_t{1} << 14});
  Result<std::vector<HostTensor>> r = (*engine)->run(std::span<const HostTensor>(&huge, 1));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("2^27"), std::string::npos) << r.status().message();
}

TEST_F(OnnxEngineTest, FloatInputsReadOnlyAsResizeScalesAreShapeTensors) {
  const auto resize_model = [](bool scales_also_data) {
    std::vector<Node> nodes{node("Resize", {"x", "", "scales"}, {"y"})};
    std::vector<ValueInfo> outputs{info("y", ElemType::kFloat, {-1, -1, -1, -1})};
    if (scales_also_data) {
      nodes.push_back(node("Relu", {"scales"}, {"r"}));
      outputs.push_back(info("r", ElemType::kFloat, {4}));
    }
    return model_of(std::move(nodes),
                    {info("x", ElemType::kFloat, {1, 1, 2, 2}), info("scales", ElemType::kFloat, {4})},
                    std::move(outputs));
  };
  Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), resize_model(false));
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  ASSERT_TRUE((*engine)->is_shape_tensor(1));
  for (const std::vector<double>& scales : {std::vector<double>{1, 1, 2, 2}, std::vector<double>{1, 1, 1, 3}}) {
    std::vector<HostTensor> in{floats({1, 1, 2, 2}, 3.0f), make_tensor(ElemType::kFloat, {4}, scales).value()};
    Result<std::vector<HostTensor>> r = (*engine)->run(in);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ((*r)[0].dims,
              (std::vector<int64_t>{1, 1, 2 * static_cast<int64_t>(scales[2]), 2 * static_cast<int64_t>(scales[3])}));
    for (float v : (*r)[0].values<float>()) EXPECT_EQ(v, 3.0f);
  }
  EXPECT_EQ((*engine)->compiled_count(), 2u) << "one graph per value of the scales";
  // Read as data too, the input is an ordinary one, and Resize cannot read its scales at load.
  Result<std::unique_ptr<Engine>> mixed = Engine::from_model(rt(), resize_model(true));
  ASSERT_FALSE(mixed.is_ok());
  EXPECT_NE(mixed.status().message().find("'scales') must be known"), std::string::npos) << mixed.status().message();
}

// Range's bounds as float graph inputs are shape tensors too: its length is its output's shape.
TEST_F(OnnxEngineTest, FloatRangeBoundsGivenAtRunTimeAreShapeTensors) {
  Model m = model_of(
      {node("Range", {"start", "limit", "delta"}, {"y"})},
      {info("start", ElemType::kFloat, {}), info("limit", ElemType::kFloat, {}), info("delta", ElemType::kFloat, {})},
      {info("y", ElemType::kFloat, {-1})});
  Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), std::move(m));
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE((*engine)->is_shape_tensor(i)) << i;
  struct Case {
    float start, limit, delta;
    std::vector<float> want;
  };
  for (const Case& c : {Case{1.0f, 2.5f, 0.5f, {1.0f, 1.5f, 2.0f}}, Case{3.0f, -1.0f, -1.5f, {3.0f, 1.5f, 0.0f}}}) {
    const std::vector<HostTensor> in{floats({}, c.start), floats({}, c.limit), floats({}, c.delta)};
    Result<std::vector<HostTensor>> r = (*engine)->run(in);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const auto got = (*r)[0].values<float>();
    EXPECT_EQ(std::vector<float>(got.begin(), got.end()), c.want);
  }
  EXPECT_EQ((*engine)->compiled_count(), 2u) << "one graph per value of the bounds";
}

TEST_F(OnnxEngineTest, ReduceL2AndSumSquareSquareInFp32UnderFp16Storage) {
  // 1000² overflows fp16; the norm, 1000·√8 ≈ 2828, does not.
  for (const char* op : {"ReduceL2", "ReduceSumSquare"}) {
    Node reduce = node(op, {"x"}, {"y"});
    Attribute axes;
    axes.name = "axes";
    axes.kind = Attribute::Kind::kInts;
    axes.ints = {1};
    reduce.attributes.push_back(axes);
    Model m = model_of({reduce}, {info("x", ElemType::kFloat, {2, 8})}, {info("y", ElemType::kFloat, {2, 1})});
    Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), std::move(m), {DType::kF16});
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    const HostTensor x = floats({2, 8}, std::string(op) == "ReduceL2" ? 1000.0f : 80.0f);
    Result<std::vector<HostTensor>> r = (*engine)->run(std::span<const HostTensor>(&x, 1));
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const double want = std::string(op) == "ReduceL2" ? 1000.0 * std::sqrt(8.0) : 8 * 80.0 * 80.0;
    for (float v : (*r)[0].values<float>()) EXPECT_NEAR(v, want, want * 1e-3) << op;
  }
}

// OneHot with its depth and values known at load, its indices computed at run time on the device:
// integers with a negative and an out-of-range index, along a middle axis; floats, truncated toward
// zero first as ONNX's cast to integers does (-1.2 is -1, the last; -3.99 is -3).
TEST_F(OnnxEngineTest, OneHotOfRunTimeIndicesMatchesItsDefinition) {
  auto one_hot_model = [](ElemType index_type) {
    Node oh = node("OneHot", {"i", "depth", "values"}, {"y"}, "onehot");
    oh.attributes.push_back(int_attribute("axis", 1));
    Model m = model_of({oh}, {info("i", index_type, {2, 3})}, {info("y", ElemType::kFloat, {2, 4, 3})});
    m.graph.initializers.push_back(make_tensor(ElemType::kInt64, {}, std::vector<double>{4}).value());
    m.graph.initializers.back().name = "depth";
    m.graph.initializers.push_back(make_tensor(ElemType::kFloat, {2}, std::vector<double>{-1.0, 2.5}).value());
    m.graph.initializers.back().name = "values";  // off, on
    return m;
  };
  struct Case {
    ElemType type;
    std::vector<double> indices;
    int64_t hot[6];  // the row each index lights, -1 for none
  };
  const Case cases[] = {{ElemType::kInt64, {0, 3, -1, 7, 1, -4}, {0, 3, 3, -1, 1, 0}},
                        {ElemType::kFloat, {0.7, 3.9, -1.2, 7.0, 1.5, -3.99}, {0, 3, 3, -1, 1, 1}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(elem_type_name(c.type));
    Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), one_hot_model(c.type));
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    const HostTensor i = make_tensor(c.type, {2, 3}, c.indices).value();
    Result<std::vector<HostTensor>> y = (*engine)->run(std::span<const HostTensor>(&i, 1));
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    const auto got = (*y)[0].values<float>();
    ASSERT_EQ(got.size(), 24u);
    for (int64_t o = 0; o < 2; ++o) {
      for (int64_t j = 0; j < 4; ++j) {
        for (int64_t r = 0; r < 3; ++r) {
          EXPECT_EQ(got[static_cast<size_t>((o * 4 + j) * 3 + r)], c.hot[o * 3 + r] == j ? 2.5f : -1.0f) << o << j << r;
        }
      }
    }
  }
}

// OneHot whose depth and values are graph inputs (as the backend tests give them): shape tensors,
// each depth and value pair compiling its own graph.
TEST_F(OnnxEngineTest, OneHotTakesItsDepthAndValuesAsShapeTensors) {
  Node oh = node("OneHot", {"i", "depth", "values"}, {"y"}, "onehot");
  Model m = model_of(
      {oh},
      {info("i", ElemType::kInt64, {3}), info("depth", ElemType::kFloat, {}), info("values", ElemType::kFloat, {2})},
      {info("y", ElemType::kFloat, {3, -1})});
  Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), std::move(m));
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  EXPECT_TRUE((*engine)->is_shape_tensor(1));
  EXPECT_TRUE((*engine)->is_shape_tensor(2));
  const HostTensor i = make_tensor(ElemType::kInt64, {3}, std::vector<double>{0, 2, -1}).value();
  for (const double depth : {3.0, 5.0}) {
    const std::vector<HostTensor> inputs{i, make_tensor(ElemType::kFloat, {}, std::vector<double>{depth}).value(),
                                         make_tensor(ElemType::kFloat, {2}, std::vector<double>{0.5, 4.0}).value()};
    Result<std::vector<HostTensor>> y = (*engine)->run(inputs);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    const int64_t d = static_cast<int64_t>(depth);
    ASSERT_EQ((*y)[0].dims, (std::vector<int64_t>{3, d}));
    const auto got = (*y)[0].values<float>();
    const int64_t hot[3] = {0, 2, d - 1};
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t j = 0; j < d; ++j) EXPECT_EQ(got[static_cast<size_t>(r * d + j)], hot[r] == j ? 4.0f : 0.5f);
    }
  }
  EXPECT_EQ((*engine)->compiled_count(), 2u);
}

// Booleans computed at run time, as attention masks and torch.where exports make them: float and
// integer comparisons with broadcasting (NaN compares false), And, Or, Xor and Not, Where of floats
// and of int64, and Cast to and from bool (NaN is true) and float to int64 (truncating), in fp32 and
// fp16. A bool graph input holding a byte of 2 counts as true; bool outputs come back one byte each.
TEST_F(OnnxEngineTest, BooleansComputedAtRunTimeMatchTheirDefinitions) {
  const auto cast = [](std::string in, std::string out, ElemType to) {
    Node n = node("Cast", {std::move(in)}, {std::move(out)});
    n.attributes.push_back(int_attribute("to", static_cast<int64_t>(to)));
    return n;
  };
  std::vector<Node> nodes{node("Greater", {"x", "half"}, {"gt"}),
                          node("LessOrEqual", {"x", "half"}, {"le"}),
                          node("And", {"gt", "keep"}, {"both"}),
                          node("Or", {"le", "keep"}, {"either"}),
                          node("Not", {"either"}, {"neither"}),
                          node("Xor", {"gt", "le"}, {"ordered"}),
                          node("Where", {"both", "x", "fill"}, {"y"}),
                          cast("both", "mask", ElemType::kFloat),
                          cast("x", "nonzero", ElemType::kBool),
                          cast("nonzero", "nonzero_f", ElemType::kFloat),
                          cast("y", "i", ElemType::kInt64),
                          node("Equal", {"i", "k"}, {"i_eq_k"}),
                          node("Where", {"keep", "i", "ints"}, {"picked"})};
  const int64_t rows = 2, cols = 6;
  Model m = model_of(std::move(nodes),
                     {info("x", ElemType::kFloat, {rows, cols}), info("keep", ElemType::kBool, {cols}),
                      info("k", ElemType::kInt64, {rows, 1})},
                     {info("both", ElemType::kBool, {rows, cols}), info("neither", ElemType::kBool, {rows, cols}),
                      info("ordered", ElemType::kBool, {rows, cols}), info("y", ElemType::kFloat, {rows, cols}),
                      info("mask", ElemType::kFloat, {rows, cols}), info("nonzero_f", ElemType::kFloat, {rows, cols}),
                      info("i_eq_k", ElemType::kBool, {rows, cols}), info("picked", ElemType::kInt64, {rows, cols})});
  const auto constant = [&](const char* name, ElemType type, std::vector<int64_t> dims, std::vector<double> v) {
    m.graph.initializers.push_back(make_tensor(type, std::move(dims), v).value());
    m.graph.initializers.back().name = name;
  };
  constant("half", ElemType::kFloat, {}, {0.5});
  constant("fill", ElemType::kFloat, {1}, {-7.0});
  constant("ints", ElemType::kInt64, {cols}, {10, 11, 12, 13, 14, 15});
  // x is exact in fp16. k, a small int64 input, is a shape tensor: compiled in, uploaded for Equal.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x{-1.5f, 0.0f, -0.0f, 0.75f, 0.5f, nan, 2.5f, 1.0f, 3.75f, -2.25f, 0.5f, 7.0f};
  const std::vector<uint8_t> keep{1, 0, 2, 1, 0, 1};
  const std::vector<int64_t> k{2, 7};
  const std::vector<HostTensor> inputs{float_tensor({rows, cols}, x), HostTensor::owned(ElemType::kBool, {cols}, keep),
                                       make_int64_tensor({rows, 1}, k)};
  for (const DType precision : {DType::kF32, DType::kF16}) {
    Result<std::vector<HostTensor>> r = run_model(m, precision, inputs);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const std::vector<HostTensor>& out = *r;
    ASSERT_EQ(out.size(), 8u);
    for (size_t o : {0, 1, 2, 6}) {
      ASSERT_EQ(out[o].type, ElemType::kBool) << o;
      ASSERT_EQ(out[o].bytes.size(), static_cast<size_t>(rows * cols)) << o;
    }
    const auto bools = [&](size_t o) { return out[o].values<uint8_t>(); };
    const auto float_values = [&](size_t o) { return out[o].values<float>(); };
    const auto picked = out[7].values<int64_t>();
    for (int64_t e = 0; e < rows * cols; ++e) {
      const float v = x[e];
      const bool kept = keep[e % cols] != 0, gt = v > 0.5f, le = v <= 0.5f, both = gt && kept;
      const float y = both ? v : -7.0f;
      const auto i = static_cast<int64_t>(std::trunc(y));
      const std::string at = std::string(dtype_name(precision)) + " element " + std::to_string(e);
      EXPECT_EQ(bools(0)[e], both) << at;
      EXPECT_EQ(bools(1)[e], !(le || kept)) << at;
      EXPECT_EQ(bools(2)[e], gt != le) << at;  // both false for NaN
      EXPECT_EQ(float_values(3)[e], y) << at;
      EXPECT_EQ(float_values(4)[e], both ? 1.0f : 0.0f) << at;
      EXPECT_EQ(float_values(5)[e], v != 0.0f ? 1.0f : 0.0f) << at;  // NaN != 0
      EXPECT_EQ(bools(6)[e], i == k[e / cols]) << at;
      EXPECT_EQ(picked[e], kept ? i : 10 + e % cols) << at;
    }
  }
}

// Comparisons, logic and Where of values known at load stay on the host: shape arithmetic that
// picks a dimension by a comparison folds into a constant shape.
TEST_F(OnnxEngineTest, ComparisonsAndWhereOfConstantsFoldOnTheHost) {
  std::vector<Node> nodes{node("Shape", {"x"}, {"s"}),
                          node("GreaterOrEqual", {"s", "three"}, {"ge"}),   // [F, T]
                          node("LessOrEqual", {"s", "two"}, {"le"}),        // [T, F]
                          node("Xor", {"ge", "le"}, {"any"}),               // [T, T]
                          node("Not", {"any"}, {"none"}),                   // [F, F]
                          node("And", {"any", "ge"}, {"second"}),           // [F, T]
                          node("Or", {"none", "second"}, {"pick"}),         // [F, T]
                          node("Where", {"pick", "five", "s"}, {"shape"}),  // [2, 5]
                          node("ConstantOfShape", {"shape"}, {"y"})};
  Model m = model_of(std::move(nodes), {info("x", ElemType::kFloat, {2, 3})}, {info("y", ElemType::kFloat, {-1, -1})});
  for (const auto& [name, value] : {std::pair{"three", 3}, std::pair{"two", 2}, std::pair{"five", 5}}) {
    m.graph.initializers.push_back(make_int64_tensor({1}, std::vector<int64_t>{value}));
    m.graph.initializers.back().name = name;
  }
  Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), std::move(m));
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const HostTensor x = floats({2, 3}, 1.0f);
  Result<CompiledGraph*> graph = (*engine)->compiled(std::span<const HostTensor>(&x, 1));
  ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
  EXPECT_EQ((*graph)->folded_nodes, 8u) << "every node after Shape";
  Result<std::vector<HostTensor>> r = (*engine)->run(std::span<const HostTensor>(&x, 1));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (std::vector<int64_t>{2, 5}));
}

// Mod of run-time operands against Python's % (fmod = 0) and C's fmod (fmod = 1): int64 with
// mixed signs and a broadcast divisor, floats of both signs (exact in fp16, so both precisions give
// the exact remainders); a Mod of the input's shape folds on the host into a constant shape.
TEST_F(OnnxEngineTest, ModOfRunTimeOperandsMatchesPythonAndC) {
  const auto mod = [](std::string a, std::string b, std::string out, int64_t fmod) {
    Node n = node("Mod", {std::move(a), std::move(b)}, {std::move(out)});
    n.attributes.push_back(int_attribute("fmod", fmod));
    return n;
  };
  const int64_t rows = 2, cols = 40;
  std::vector<Node> nodes{mod("i", "d", "i_mod", 0),
                          mod("i", "d", "i_fmod", 1),
                          mod("x", "y", "x_mod", 0),
                          mod("x", "y", "x_fmod", 1),
                          node("Shape", {"x"}, {"s"}),
                          mod("s", "seven", "s_mod", 0),
                          node("ConstantOfShape", {"s_mod"}, {"z"})};
  Model m =
      model_of(std::move(nodes), {info("i", ElemType::kInt64, {rows, cols}), info("x", ElemType::kFloat, {rows, cols})},
               {info("i_mod", ElemType::kInt64, {rows, cols}), info("i_fmod", ElemType::kInt64, {rows, cols}),
                info("x_mod", ElemType::kFloat, {rows, cols}), info("x_fmod", ElemType::kFloat, {rows, cols}),
                info("z", ElemType::kFloat, {-1, -1})});
  std::vector<int64_t> d(cols), i(rows * cols);
  std::vector<double> y(cols);
  std::vector<float> x(rows * cols);
  for (int64_t c = 0; c < cols; ++c) {
    d[c] = (c % 2 == 0 ? 1 : -1) * (1 + c % 7);
    y[c] = (c % 3 == 0 ? -0.25 : 0.25) * static_cast<double>(1 + c % 11);
  }
  for (int64_t e = 0; e < rows * cols; ++e) {
    i[e] = e * 37 % 101 - 50;
    x[e] = 0.25f * static_cast<float>(e * 29 % 97 - 48);
  }
  m.graph.initializers.push_back(make_int64_tensor({cols}, d));
  m.graph.initializers.back().name = "d";
  m.graph.initializers.push_back(make_tensor(ElemType::kFloat, {cols}, y).value());
  m.graph.initializers.back().name = "y";
  m.graph.initializers.push_back(make_int64_tensor({1}, std::vector<int64_t>{7}));
  m.graph.initializers.back().name = "seven";
  const std::vector<HostTensor> inputs{make_int64_tensor({rows, cols}, i), float_tensor({rows, cols}, x)};
  for (const DType precision : {DType::kF32, DType::kF16}) {
    Result<std::vector<HostTensor>> r = run_model(m, precision, inputs);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const std::vector<HostTensor>& out = *r;
    ASSERT_EQ(out.size(), 5u);
    const auto i_mod = out[0].values<int64_t>(), i_fmod = out[1].values<int64_t>();
    const auto x_mod = out[2].values<float>(), x_fmod = out[3].values<float>();
    for (int64_t e = 0; e < rows * cols; ++e) {
      const int64_t dv = d[e % cols];
      const double yv = y[e % cols], rf = std::fmod(static_cast<double>(x[e]), yv);
      const int64_t ri = i[e] % dv;
      const std::string at = std::string(dtype_name(precision)) + " element " + std::to_string(e);
      EXPECT_EQ(i_fmod[e], ri) << at;
      EXPECT_EQ(i_mod[e], ri != 0 && (ri < 0) != (dv < 0) ? ri + dv : ri) << at;
      EXPECT_EQ(x_fmod[e], rf) << at;
      EXPECT_EQ(x_mod[e], rf != 0 && (rf < 0) != (yv < 0) ? rf + yv : rf) << at;
    }
    EXPECT_EQ(out[4].dims, (std::vector<int64_t>{2, 5}));  // [2, 40] mod 7
  }
}

// Pow with integer operands (opset 12 on): an int64 base to int64 exponents gives int64 powers,
// negative bases and odd exponents too; a float base to int64 exponents floats. Run-time operands,
// fp32 and fp16 (every power below fp16's 2^11, so exact there too).
TEST_F(OnnxEngineTest, PowOfIntegerOperandsMatchesItsDefinition) {
  const int64_t n = 24;
  Model m =
      model_of({node("Pow", {"i", "e"}, {"i_pow"}), node("Pow", {"x", "e"}, {"x_pow"})},
               {info("i", ElemType::kInt64, {n}), info("x", ElemType::kFloat, {n}), info("e", ElemType::kInt64, {n})},
               {info("i_pow", ElemType::kInt64, {n}), info("x_pow", ElemType::kFloat, {n})});
  std::vector<int64_t> i(n), e(n);
  std::vector<float> x(n);
  for (int64_t k = 0; k < n; ++k) {
    i[k] = k % 7 - 3;                                // -3 .. 3
    e[k] = k % 6;                                    // 0 .. 5: at most 3^5 = 243
    x[k] = 0.5f * static_cast<float>(k % 5) - 1.0f;  // -1 .. 1
  }
  const std::vector<HostTensor> inputs{make_int64_tensor({n}, i), float_tensor({n}, x), make_int64_tensor({n}, e)};
  for (const DType precision : {DType::kF32, DType::kF16}) {
    Result<std::vector<HostTensor>> r = run_model(m, precision, inputs);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const auto i_pow = (*r)[0].values<int64_t>();
    const auto x_pow = (*r)[1].values<float>();
    for (int64_t k = 0; k < n; ++k) {
      const std::string at = std::string(dtype_name(precision)) + " element " + std::to_string(k);
      EXPECT_EQ(i_pow[k], static_cast<int64_t>(std::pow(static_cast<double>(i[k]), static_cast<double>(e[k])))) << at;
      EXPECT_NEAR(x_pow[k], std::pow(static_cast<double>(x[k]), static_cast<double>(e[k])), 1e-3) << at;
    }
  }
}

// IsNaN and IsInf (each sign, both) of a run-time input in fp32 and fp16 (where 1e5 is beyond fp16's
// range and so infinite), and of a constant, folded on the host.
TEST_F(OnnxEngineTest, IsNaNAndIsInfTellNaNAndInfinitiesApart) {
  const auto is_inf = [](std::string in, std::string out, int64_t positive, int64_t negative) {
    Node n = node("IsInf", {std::move(in)}, {std::move(out)});
    n.attributes.push_back(int_attribute("detect_positive", positive));
    n.attributes.push_back(int_attribute("detect_negative", negative));
    return n;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x{0.0f, -0.0f, 1.5f, inf, -inf, nan, -nan, 65504.0f, 1e5f, -1e5f, -2.0f, 7.0f};
  const auto n = static_cast<int64_t>(x.size());
  Model m =
      model_of({node("IsNaN", {"x"}, {"nan"}), is_inf("x", "inf", 1, 1), is_inf("x", "pos", 1, 0),
                is_inf("x", "neg", 0, 1), is_inf("c", "c_pos", 1, 0)},
               {info("x", ElemType::kFloat, {n})},
               {info("nan", ElemType::kBool, {n}), info("inf", ElemType::kBool, {n}), info("pos", ElemType::kBool, {n}),
                info("neg", ElemType::kBool, {n}), info("c_pos", ElemType::kBool, {3})});
  m.graph.initializers.push_back(
      make_tensor(ElemType::kFloat, {3}, std::vector<double>{HUGE_VAL, -HUGE_VAL, 1.0}).value());
  m.graph.initializers.back().name = "c";
  const HostTensor in = float_tensor({n}, x);
  for (const DType precision : {DType::kF32, DType::kF16}) {
    Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), m, {precision});
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    Result<CompiledGraph*> graph = (*engine)->compiled(std::span<const HostTensor>(&in, 1));
    ASSERT_TRUE(graph.is_ok()) << graph.status().to_string();
    EXPECT_EQ((*graph)->folded_nodes, 1u) << "IsInf of the constant";
    Result<std::vector<HostTensor>> r = (*engine)->run(std::span<const HostTensor>(&in, 1));
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const std::vector<HostTensor>& out = *r;
    ASSERT_EQ(out.size(), 5u);
    for (int64_t e = 0; e < n; ++e) {
      // fp16 holds at most 65504: 1e5 uploads as inf.
      const float v = precision == DType::kF16 && std::abs(x[e]) > 65504.0f ? std::copysign(inf, x[e]) : x[e];
      const std::string at = std::string(dtype_name(precision)) + " element " + std::to_string(e);
      EXPECT_EQ(out[0].values<uint8_t>()[e], std::isnan(v) ? 1 : 0) << at;
      EXPECT_EQ(out[1].values<uint8_t>()[e], std::isinf(v) ? 1 : 0) << at;
      EXPECT_EQ(out[2].values<uint8_t>()[e], v == inf ? 1 : 0) << at;
      EXPECT_EQ(out[3].values<uint8_t>()[e], v == -inf ? 1 : 0) << at;
    }
    EXPECT_EQ(std::vector<uint8_t>(out[4].bytes.begin(), out[4].bytes.end()), (std::vector<uint8_t>{1, 0, 0}));
  }
}

// GridSample as a spatial transformer uses it: an image given at run time sampled at a constant
// grid, bilinear at the pixel centres (align_corners = 1) giving the image back, nearest at the
// centres moved one pixel right (align_corners = 0) giving it shifted with zeros past the edge, in
// fp32 and fp16 (nearest exactly, bilinear within the grid's rounding, as the grid's thirds are not
// exact). A mode of a later opset is named at load.
TEST_F(OnnxEngineTest, GridSampleOfAnIdentityOrShiftedGridMovesPixels) {
  const int64_t c = 2, h = 3, w = 4;
  const auto sample = [](std::string grid, std::string out, std::string mode, int64_t align) {
    Node n = node("GridSample", {"x", std::move(grid)}, {std::move(out)});
    n.attributes.push_back(string_attribute("mode", std::move(mode)));
    n.attributes.push_back(int_attribute("align_corners", align));
    return n;
  };
  Model m = model_of({sample("centres", "same", "bilinear", 1), sample("shifted", "moved", "nearest", 0)},
                     {info("x", ElemType::kFloat, {1, c, h, w})},
                     {info("same", ElemType::kFloat, {1, c, h, w}), info("moved", ElemType::kFloat, {1, c, h, w})});
  m.opsets[""] = 16;
  std::vector<double> centres, shifted;
  for (int64_t i = 0; i < h; ++i) {
    for (int64_t j = 0; j < w; ++j) {
      centres.push_back(2.0 * static_cast<double>(j) / static_cast<double>(w - 1) - 1.0);
      centres.push_back(2.0 * static_cast<double>(i) / static_cast<double>(h - 1) - 1.0);
      shifted.push_back((2.0 * static_cast<double>(j + 1) + 1.0) / static_cast<double>(w) - 1.0);
      shifted.push_back((2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(h) - 1.0);
    }
  }
  for (const auto& [name, grid] : {std::pair{"centres", &centres}, std::pair{"shifted", &shifted}}) {
    m.graph.initializers.push_back(make_tensor(ElemType::kFloat, {1, h, w, 2}, *grid).value());
    m.graph.initializers.back().name = name;
  }
  std::vector<float> x(static_cast<size_t>(c * h * w));
  for (size_t e = 0; e < x.size(); ++e) x[e] = 0.25f * static_cast<float>(e) - 3.0f;
  const HostTensor in = float_tensor({1, c, h, w}, x);
  for (const DType precision : {DType::kF32, DType::kF16}) {
    Result<std::vector<HostTensor>> r = run_model(m, precision, std::span<const HostTensor>(&in, 1));
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const auto same = (*r)[0].values<float>(), moved = (*r)[1].values<float>();
    for (size_t e = 0; e < x.size(); ++e) {
      const bool last_column = static_cast<int64_t>(e) % w == w - 1;
      EXPECT_NEAR(same[e], x[e], precision == DType::kF32 ? 1e-6 : 2e-3) << dtype_name(precision) << " at " << e;
      EXPECT_EQ(moved[e], last_column ? 0.0f : x[e + 1]) << dtype_name(precision) << " at " << e;
    }
  }
  m.graph.nodes[0].attributes[0] = string_attribute("mode", "linear");
  Result<std::unique_ptr<Engine>> refused = Engine::from_model(rt(), m);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("GridSample mode 'linear'"), std::string::npos)
      << refused.status().message();
}

// Einsum by its definition: the sum over every label not in the output of the operands' products.
std::vector<double> einsum_reference(const std::vector<std::string>& terms, const std::string& output,
                                     const std::vector<std::vector<float>>& values,
                                     const std::vector<std::vector<int64_t>>& shapes) {
  std::string labels;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < terms.size(); ++i) {
    for (size_t d = 0; d < terms[i].size(); ++d) {
      if (labels.find(terms[i][d]) == std::string::npos) {
        labels.push_back(terms[i][d]);
        sizes.push_back(shapes[i][d]);
      }
    }
  }
  const auto offset = [&](const std::string& term, const std::vector<int64_t>& index) {
    int64_t o = 0;
    for (char l : term) o = o * sizes[labels.find(l)] + index[labels.find(l)];
    return o;
  };
  int64_t out_numel = 1, total = 1;
  for (char l : output) out_numel *= sizes[labels.find(l)];
  for (int64_t s : sizes) total *= s;
  std::vector<double> out(static_cast<size_t>(out_numel), 0.0);
  std::vector<int64_t> index(labels.size(), 0);
  for (int64_t e = 0; e < total; ++e) {
    int64_t rem = e;
    for (size_t d = labels.size(); d-- > 0;) {
      index[d] = rem % sizes[d];
      rem /= sizes[d];
    }
    double product = 1.0;
    for (size_t i = 0; i < terms.size(); ++i) product *= values[i][static_cast<size_t>(offset(terms[i], index))];
    out[static_cast<size_t>(offset(output, index))] += product;
  }
  return out;
}

// Einsum equations that are a transpose and a batched MatMul, against its definition in fp32 and
// fp16: batch matmul, attention scores, a contraction with a permuted output, a label of one input
// summed away, an outer product, the implicit output, and one-input transposes and sums. Ellipses,
// diagonals and three inputs are refused by name.
TEST_F(OnnxEngineTest, EinsumOfTransposesAndBatchedMatMulsMatchesItsDefinition) {
  struct Case {
    std::string equation, output;  // output: the labels the equation names or implies
    std::vector<std::vector<int64_t>> shapes;
  };
  const Case cases[] = {{"bij,bjk->bik", "bik", {{2, 3, 4}, {2, 4, 5}}},
                        {"bhqd,bhkd->bhqk", "bhqk", {{1, 2, 3, 4}, {1, 2, 5, 4}}},
                        {"ijk,ik->ji", "ji", {{3, 4, 5}, {3, 5}}},
                        {"abc,cd->da", "da", {{2, 3, 4}, {4, 5}}},
                        {"i,j->ij", "ij", {{3}, {4}}},
                        {"ij,jk", "ik", {{3, 4}, {4, 2}}},
                        {"i,i", "", {{6}, {6}}},
                        {"ij->ji", "ji", {{3, 5}}},
                        {"ijk->ki", "ki", {{2, 3, 4}}}};
  uint32_t seed = 90;
  for (const Case& c : cases) {
    const std::string lhs = c.equation.substr(0, c.equation.find("->"));
    const std::vector<std::string> terms =
        lhs.find(',') == std::string::npos
            ? std::vector<std::string>{lhs}
            : std::vector<std::string>{lhs.substr(0, lhs.find(',')), lhs.substr(lhs.find(',') + 1)};
    std::vector<ValueInfo> inputs;
    std::vector<std::string> names;
    std::vector<HostTensor> tensors;
    std::vector<std::vector<float>> values;
    for (size_t i = 0; i < terms.size(); ++i) {
      names.push_back(i == 0 ? "a" : "b");
      inputs.push_back(info(names.back(), ElemType::kFloat, c.shapes[i]));
      values.push_back(testing::random_floats(static_cast<size_t>(shape_numel(c.shapes[i])), ++seed, -1.0f, 1.0f));
      std::vector<uint8_t> bytes(values.back().size() * 4);
      std::memcpy(bytes.data(), values.back().data(), bytes.size());
      tensors.push_back(HostTensor::owned(ElemType::kFloat, c.shapes[i], bytes));
    }
    const std::vector<double> want = einsum_reference(terms, c.output, values, c.shapes);
    std::vector<int64_t> out_dims(c.output.size(), -1);
    Node n = node("Einsum", names, {"y"});
    n.attributes.push_back(string_attribute("equation", c.equation));
    Model m = model_of({n}, inputs, {info("y", ElemType::kFloat, out_dims)});
    m.opsets[""] = 12;
    double scale = 1e-6;
    for (double v : want) scale = std::max(scale, std::abs(v));
    for (const DType precision : {DType::kF32, DType::kF16}) {
      Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), m, {precision});
      ASSERT_TRUE(engine.is_ok()) << c.equation << ": " << engine.status().to_string();
      Result<std::vector<HostTensor>> r = (*engine)->run(tensors);
      ASSERT_TRUE(r.is_ok()) << c.equation << ": " << r.status().to_string();
      const auto got = (*r)[0].values<float>();
      ASSERT_EQ(got.size(), want.size()) << c.equation;
      double worst = 0;
      for (size_t e = 0; e < want.size(); ++e) worst = std::max(worst, std::abs(got[e] - want[e]) / scale);
      EXPECT_LE(worst, precision == DType::kF32 ? 1e-5 : 5e-3) << c.equation << " in " << dtype_name(precision);
    }
  }
  for (const auto& [equation, reason] : {std::pair{"ii->i", "repeated within 'ii'"},
                                         std::pair{"...ij->...ji", "ellipsis"}, std::pair{"i,i,i->i", "3 inputs"}}) {
    const size_t count = std::string(equation).find(",i,") != std::string::npos ? 3 : 1;
    std::vector<std::string> names(count, "a");
    Node n = node("Einsum", names, {"y"});
    n.attributes.push_back(string_attribute("equation", equation));
    Model m = model_of({n}, {info("a", ElemType::kFloat, {3, 3})}, {info("y", ElemType::kFloat, {-1})});
    m.opsets[""] = 12;
    Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), m);
    ASSERT_FALSE(engine.is_ok()) << equation;
    EXPECT_NE(engine.status().message().find(reason), std::string::npos) << engine.status().message();
  }
}

// An embedding lookup: a constant table gathered by token ids given at run time (more than a shape
// tensor's 64, so they stay on the device), negative ids from the end, in fp32 and fp16.
TEST_F(OnnxEngineTest, AnEmbeddingTableIsGatheredByRunTimeIds) {
  const int64_t vocab = 7, width = 3, rows = 2, cols = 40;
  Model m = model_of({node("Gather", {"table", "ids"}, {"y"})}, {info("ids", ElemType::kInt64, {rows, cols})},
                     {info("y", ElemType::kFloat, {rows, cols, width})});
  std::vector<double> table(static_cast<size_t>(vocab * width));
  for (size_t i = 0; i < table.size(); ++i) table[i] = 0.25 * static_cast<double>(i) - 2.0;  // exact in fp16
  m.graph.initializers.push_back(make_tensor(ElemType::kFloat, {vocab, width}, table).value());
  m.graph.initializers.back().name = "table";
  std::vector<int64_t> ids(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i * 5 % (2 * vocab)) - vocab;  // [−7, 7)
  const HostTensor in = make_int64_tensor({rows, cols}, ids);
  for (const DType precision : {DType::kF32, DType::kF16}) {
    Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), m, {precision});
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    ASSERT_FALSE((*engine)->is_shape_tensor(0));
    Result<std::vector<HostTensor>> r = (*engine)->run(std::span<const HostTensor>(&in, 1));
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    const auto got = (*r)[0].values<float>();
    ASSERT_EQ(got.size(), ids.size() * width);
    for (size_t t = 0; t < ids.size(); ++t) {
      const int64_t row = ids[t] < 0 ? ids[t] + vocab : ids[t];
      for (int64_t c = 0; c < width; ++c) {
        EXPECT_EQ(got[t * width + c], table[static_cast<size_t>(row * width + c)])
            << dtype_name(precision) << " token " << t << " (id " << ids[t] << ")";
      }
    }
  }
}

// The losses' definition in double over x [N, C, D] and targets [N, D]: log_prob = log_softmax over
// C; each target's loss −log_prob[n, t, d] · w[t] and applied weight w[t], both 0 where t is the
// ignored index.
struct LossReference {
  std::vector<double> log_prob, losses, applied;
};

LossReference loss_reference(const std::vector<float>& x, bool softmax_first, const std::vector<int64_t>& targets,
                             const std::vector<double>& weights, std::optional<int64_t> ignore_index, int64_t n,
                             int64_t c, int64_t d) {
  LossReference r;
  r.log_prob.assign(x.begin(), x.end());
  for (int64_t i = 0; softmax_first && i < n; ++i) {
    for (int64_t k = 0; k < d; ++k) {
      const auto at = [&](int64_t j) { return static_cast<size_t>((i * c + j) * d + k); };
      double top = x[at(0)], sum = 0;
      for (int64_t j = 0; j < c; ++j) top = std::max(top, double(x[at(j)]));
      for (int64_t j = 0; j < c; ++j) sum += std::exp(double(x[at(j)]) - top);
      for (int64_t j = 0; j < c; ++j) r.log_prob[at(j)] = double(x[at(j)]) - top - std::log(sum);
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < d; ++k) {
      const int64_t t = targets[static_cast<size_t>(i * d + k)];
      const bool ignored = ignore_index && t == *ignore_index;
      const double w = ignored ? 0.0 : weights.empty() ? 1.0 : weights[static_cast<size_t>(t)];
      r.applied.push_back(w);
      r.losses.push_back(ignored ? 0.0 : -r.log_prob[static_cast<size_t>((i * c + t) * d + k)] * w);
    }
  }
  return r;
}

double sum_of(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e;
  return s;
}

// max |got − want| / max(max |want|, 1).
double error_against(std::span<const float> got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0, scale = 1;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  return worst / scale;
}

// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss of run-time scores [2, 5, 4, 9] and int64
// targets, against their definition in double: class weights, ignore_index −1 (outside [0, C), so
// its gathers read an edge class the mask must drop), each reduction, the weighted mean's denominator
// being the sum of the applied weights, and SoftmaxCrossEntropyLoss's log_prob output; fp32 and fp16.
TEST_F(OnnxEngineTest, LossesMatchTheirDefinitionWithWeightsAndAnIgnoredIndex) {
  const int64_t n = 2, c = 5, d1 = 4, d2 = 9, d = d1 * d2;
  const auto loss_node = [](std::string op, std::vector<std::string> in, std::vector<std::string> out,
                            std::string reduction, std::optional<int64_t> ignore_index) {
    Node l = node(std::move(op), std::move(in), std::move(out));
    l.attributes.push_back(string_attribute("reduction", std::move(reduction)));
    if (ignore_index) l.attributes.push_back(int_attribute("ignore_index", *ignore_index));
    return l;
  };
  std::vector<Node> nodes{
      loss_node("SoftmaxCrossEntropyLoss", {"x", "t", "w"}, {"sce_mean", "log_prob"}, "mean", -1),
      loss_node("NegativeLogLikelihoodLoss", {"log_prob", "t", "w"}, {"nll_none"}, "none", -1),
      loss_node("NegativeLogLikelihoodLoss", {"log_prob", "t"}, {"nll_mean_unweighted"}, "mean", -1),
      loss_node("NegativeLogLikelihoodLoss", {"x", "u", "w"}, {"nll_sum"}, "sum", std::nullopt),
      loss_node("SoftmaxCrossEntropyLoss", {"x", "u"}, {"sce_plain_mean"}, "mean", std::nullopt)};
  const std::vector<ValueInfo> outputs{
      info("sce_mean", ElemType::kFloat, {}),          info("log_prob", ElemType::kFloat, {n, c, d1, d2}),
      info("nll_none", ElemType::kFloat, {n, d1, d2}), info("nll_mean_unweighted", ElemType::kFloat, {}),
      info("nll_sum", ElemType::kFloat, {}),           info("sce_plain_mean", ElemType::kFloat, {})};
  Model m = model_of(std::move(nodes),
                     {info("x", ElemType::kFloat, {n, c, d1, d2}), info("t", ElemType::kInt64, {n, d1, d2}),
                      info("u", ElemType::kInt64, {n, d1, d2})},
                     outputs);
  m.opsets[""] = 13;
  const std::vector<double> w{0.5, 2.0, 1.25, 0.75, 3.0};
  m.graph.initializers.push_back(make_tensor(ElemType::kFloat, {c}, w).value());
  m.graph.initializers.back().name = "w";
  std::vector<float> x(static_cast<size_t>(n * c * d));
  for (size_t e = 0; e < x.size(); ++e) x[e] = 0.125f * static_cast<float>(static_cast<int64_t>(e * 37 % 61) - 30);
  std::vector<int64_t> t(static_cast<size_t>(n * d)), u(t.size());
  for (size_t e = 0; e < t.size(); ++e) {
    u[e] = static_cast<int64_t>(e * 7 % c);
    t[e] = e % 4 == 1 ? -1 : static_cast<int64_t>((e * 3 + 1) % c);
  }
  const std::vector<HostTensor> inputs{float_tensor({n, c, d1, d2}, x), make_int64_tensor({n, d1, d2}, t),
                                       make_int64_tensor({n, d1, d2}, u)};
  const LossReference weighted = loss_reference(x, true, t, w, -1, n, c, d);
  const LossReference unweighted = loss_reference(x, true, t, {}, -1, n, c, d);
  const LossReference raw = loss_reference(x, false, u, w, std::nullopt, n, c, d);
  const LossReference plain = loss_reference(x, true, u, {}, std::nullopt, n, c, d);
  const std::vector<std::vector<double>> want{{sum_of(weighted.losses) / sum_of(weighted.applied)},
                                              weighted.log_prob,
                                              weighted.losses,
                                              {sum_of(unweighted.losses) / sum_of(unweighted.applied)},
                                              {sum_of(raw.losses)},
                                              {sum_of(plain.losses) / static_cast<double>(n * d)}};
  ASSERT_LT(sum_of(unweighted.applied), static_cast<double>(n * d)) << "some targets are ignored";
  for (const auto& [precision, tolerance] : {std::pair{DType::kF32, 2e-6}, std::pair{DType::kF16, 2e-3}}) {
    Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), m, {precision});
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    ASSERT_FALSE((*engine)->is_shape_tensor(1));
    Result<std::vector<HostTensor>> r = (*engine)->run(inputs);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    ASSERT_EQ(r->size(), want.size());
    for (size_t o = 0; o < want.size(); ++o) {
      EXPECT_EQ((*r)[o].dims, outputs[o].dims) << outputs[o].name;
      const double err = error_against((*r)[o].values<float>(), want[o]);
      EXPECT_LE(err, tolerance) << dtype_name(precision) << " " << outputs[o].name;
    }
  }
}

// A weighted mean over 20,000 targets whose losses sum past fp16's range (8 each: 160,000) stays
// finite in fp16 storage: the loss is (Σ losses / N) / (Σ weights / N).
TEST_F(OnnxEngineTest, AWeightedMeanLossOfManyTargetsStaysWithinFp16) {
  const int64_t n = 2, c = 3, d = 10000;
  Node l = node("NegativeLogLikelihoodLoss", {"x", "t", "w"}, {"y"});
  l.attributes.push_back(int_attribute("ignore_index", 1));
  Model m = model_of({l}, {info("x", ElemType::kFloat, {n, c, d}), info("t", ElemType::kInt64, {n, d})},
                     {info("y", ElemType::kFloat, {})});
  m.graph.initializers.push_back(make_tensor(ElemType::kFloat, {c}, std::vector<double>{2.0, 3.0, 5.0}).value());
  m.graph.initializers.back().name = "w";
  std::vector<int64_t> t(static_cast<size_t>(n * d), 0);
  for (size_t e = 0; e < t.size(); e += 3) t[e] = 1;  // ignored
  const std::vector<HostTensor> inputs{floats({n, c, d}, -4.0f), make_int64_tensor({n, d}, t)};
  Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), m, {DType::kF16});
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  Result<std::vector<HostTensor>> r = (*engine)->run(inputs);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_NEAR((*r)[0].values<float>()[0], 4.0f, 4e-3);  // each kept target: 4 · 2 / 2
}

// What the losses cannot run is refused with the reason: an unknown reduction at load and float
// targets when compiling, naming the node; double scores at the graph's edge.
TEST_F(OnnxEngineTest, LossesRefuseUnknownReductionsFloatTargetsAndDoubles) {
  const auto nll = [](ElemType scores, ElemType targets, std::string reduction) {
    Node l = node("NegativeLogLikelihoodLoss", {"x", "t"}, {"y"}, "nll");
    l.attributes.push_back(string_attribute("reduction", std::move(reduction)));
    // 70 targets: more than a shape tensor holds, so the graph compiles at load.
    return model_of({l}, {info("x", scores, {70, 4}), info("t", targets, {70})}, {info("y", scores, {})});
  };
  struct Case {
    Model model;
    const char* why;
    bool names_node;
  };
  const Case cases[] = {{nll(ElemType::kFloat, ElemType::kInt64, "max"), "reduction 'max'", true},
                        {nll(ElemType::kFloat, ElemType::kFloat, "mean"), "class indices are int32 or int64", true},
                        {nll(ElemType::kDouble, ElemType::kInt64, "mean"), "input 'x' of type DOUBLE", false}};
  for (const Case& c : cases) {
    Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), c.model);
    ASSERT_FALSE(engine.is_ok()) << c.why;
    const std::string msg = engine.status().message();
    EXPECT_NE(msg.find(c.why), std::string::npos) << msg;
    if (c.names_node) {
      EXPECT_NE(msg.find("NegativeLogLikelihoodLoss 'nll'"), std::string::npos) << msg;
    }
  }
}

// LayerNormalization's Mean and InvStdDev outputs against their definition in double, over the last
// two axes and over the last one (Mean not asked for), shaped with the normalised axes as 1, in
// fp32 and fp16 (whose storage rounds the statistics).
TEST_F(OnnxEngineTest, LayerNormalizationGivesItsMeanAndInvStdDevOverTheNormalisedAxes) {
  const int64_t a = 3, b = 4, c = 6;
  const float eps = 1e-3f;
  const auto layer_norm = [eps](int64_t axis, std::vector<std::string> out) {
    Node l = node("LayerNormalization", {"x", "scale_" + std::to_string(axis)}, std::move(out));
    l.attributes.push_back(int_attribute("axis", axis));
    Attribute e;
    e.name = "epsilon";
    e.kind = Attribute::Kind::kFloat;
    e.f = eps;
    l.attributes.push_back(e);
    return l;
  };
  const std::vector<ValueInfo> outputs{
      info("y1", ElemType::kFloat, {a, b, c}), info("mean1", ElemType::kFloat, {a, 1, 1}),
      info("inv1", ElemType::kFloat, {a, 1, 1}), info("y2", ElemType::kFloat, {a, b, c}),
      info("inv2", ElemType::kFloat, {a, b, 1})};
  Model m = model_of({layer_norm(1, {"y1", "mean1", "inv1"}), layer_norm(2, {"y2", "", "inv2"})},
                     {info("x", ElemType::kFloat, {a, b, c})}, outputs);
  m.opsets[""] = 17;
  m.graph.initializers.push_back(make_tensor(ElemType::kFloat, {b, c}, std::vector<double>(b * c, 1.0)).value());
  m.graph.initializers.back().name = "scale_1";
  m.graph.initializers.push_back(make_tensor(ElemType::kFloat, {c}, std::vector<double>(c, 1.0)).value());
  m.graph.initializers.back().name = "scale_2";
  std::vector<float> x(static_cast<size_t>(a * b * c));
  for (size_t e = 0; e < x.size(); ++e)
    x[e] = 3.0f + 0.125f * static_cast<float>(static_cast<int64_t>(e * 29 % 53) - 26);
  // Mean and 1/sqrt(var + eps) of each run of `len` consecutive elements.
  const auto statistics = [&](int64_t len) {
    std::vector<double> mean, inv;
    for (size_t r = 0; r < x.size(); r += static_cast<size_t>(len)) {
      double sum = 0, sq = 0;
      for (int64_t k = 0; k < len; ++k) sum += x[r + static_cast<size_t>(k)];
      const double mu = sum / static_cast<double>(len);
      for (int64_t k = 0; k < len; ++k)
        sq += (x[r + static_cast<size_t>(k)] - mu) * (x[r + static_cast<size_t>(k)] - mu);
      mean.push_back(mu);
      inv.push_back(1.0 / std::sqrt(sq / static_cast<double>(len) + double(eps)));
    }
    return std::pair{mean, inv};
  };
  const auto [mean1, inv1] = statistics(b * c);
  const auto [mean2, inv2] = statistics(c);
  const HostTensor in = float_tensor({a, b, c}, x);
  for (const auto& [precision, tolerance] : {std::pair{DType::kF32, 1e-6}, std::pair{DType::kF16, 1e-3}}) {
    Result<std::vector<HostTensor>> r = run_model(m, precision, std::span<const HostTensor>(&in, 1));
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    ASSERT_EQ(r->size(), outputs.size());
    for (size_t o = 0; o < outputs.size(); ++o) EXPECT_EQ((*r)[o].dims, outputs[o].dims) << outputs[o].name;
    const std::pair<size_t, const std::vector<double>*> checks[] = {{1, &mean1}, {2, &inv1}, {4, &inv2}};
    for (const auto& [o, want] : checks) {
      EXPECT_LE(error_against((*r)[o].values<float>(), *want), tolerance)
          << dtype_name(precision) << " " << outputs[o].name;
    }
  }
}

TEST_F(OnnxEngineTest, AChainOfOpsReusesActivationMemory) {
  std::vector<Node> nodes;
  std::string prev = "x";
  for (int i = 0; i < 10; ++i) {
    const std::string next = i == 9 ? "y" : "t" + std::to_string(i);
    nodes.push_back(node(i % 2 ? "Relu" : "Sigmoid", {prev}, {next}));
    prev = next;
  }
  Model m = model_of(std::move(nodes), {info("x", ElemType::kFloat, {1024})}, {info("y", ElemType::kFloat, {1024})});
  Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), std::move(m));
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  const HostTensor x = floats({1024}, 2.0f);
  Result<CompiledGraph*> graph = (*engine)->compiled(std::span<const HostTensor>(&x, 1));
  ASSERT_TRUE(graph.is_ok());
  EXPECT_LE((*graph)->memory->storage_count(), 3u) << "ten outputs, two live at a time";
  Result<std::vector<HostTensor>> r = (*engine)->run(std::span<const HostTensor>(&x, 1));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  double want = 2.0;
  for (int i = 0; i < 10; ++i) want = i % 2 ? std::max(want, 0.0) : 1.0 / (1.0 + std::exp(-want));
  EXPECT_NEAR((*r)[0].values<float>()[1023], want, 1e-6);
}

}  // namespace
}  // namespace recon::gpu::onnx
