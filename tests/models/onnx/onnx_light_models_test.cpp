// ONNX's `light` models (onnx/backend/test/data/light, in Debian 13's libonnx-testdata, fetched by
// scripts/install-deps): AlexNet, DenseNet-121, Inception v1 and v2, ResNet-50, ShuffleNet,
// SqueezeNet, VGG-19 and ZFNet-512 as the ONNX model zoo has them (opsets 3 to 9), every weight made
// by a ConstantOfShape node. As ONNX's runner does, each gets one input of arange(n) / n in its
// declared shape and must give the stored output within the model's tolerance. Eight of the nine
// expected outputs are the uniform softmax (0.001 in each of 1,000 classes: equal weights make
// equal logits), so they check that the whole architecture loads, folds and runs; DenseNet-121's
// (0.46095502, no softmax) is a value the network's arithmetic decides. fp32-split runs too where
// the device has tensor cores (elsewhere it is the fp32 path), on the models its range allows, and
// fp32 channels-last (onnx_channels_last.h) on every device: the rewrite meets weights made at load,
// concatenations, LRN, batch norms it cannot fold (DenseNet's pre-activations) and ShuffleNet's
// channel shuffle, each between transposes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gpu/models/onnx/onnx_engine.h"
#include "gpu/models/onnx/onnx_file.h"
#include "gpu/models/onnx/onnx_op_table.h"
#include "gpu/ops/matmul.h"
#include "gpu/precision.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/models/onnx/onnx_backend_data.h"

namespace recon::gpu::onnx {
namespace {

namespace fs = std::filesystem;

struct LightModel {
  const char* name;  // light_<name>.onnx, light_<name>_output_<i>.pb
  double rtol;       // ONNX's own (onnx/backend/test/case/model); atol is 1e-7 for all
  // Whether every GEMM operand stays within fp16's range (±65504), which fp32-split's two fp16
  // parts need: ResNet-50's equal weights grow its activations beyond it (NaN on an H200).
  bool within_fp16_range = true;
};

const LightModel kModels[] = {{"bvlc_alexnet", 1e-3}, {"densenet121", 2e-3},     {"inception_v1", 1e-3},
                              {"inception_v2", 1e-3}, {"resnet50", 1e-3, false}, {"shufflenet", 1e-3},
                              {"squeezenet", 1e-3},   {"vgg19", 1e-3},           {"zfnet512", 1e-3}};

fs::path data_dir() {
  if (const char* dir = std::getenv("RECON_ONNX_LIGHT_MODELS")) return dir;
  return "/usr/local/share/recon/onnx-light";
}

// ONNX's dummy input: 0, 1/n, 2/n ... in the declared shape, a free dimension taken as 1.
HostTensor arange_input(const ValueInfo& info) {
  std::vector<int64_t> dims = info.dims;
  for (int64_t& d : dims) d = d > 0 ? d : 1;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * sizeof(float));
  auto* values = reinterpret_cast<float*>(bytes.data());
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(static_cast<double>(i) / static_cast<double>(n));
  return HostTensor::owned(ElemType::kFloat, std::move(dims), std::move(bytes), info.name);
}

struct LightMode {
  const char* name;
  Precision precision;
  EngineOptions::Layout layout;
};

class OnnxLightModels : public testing::GpuTest, public ::testing::WithParamInterface<LightMode> {};

TEST_P(OnnxLightModels, EveryModelGivesItsStoredOutput) {
  const fs::path dir = data_dir();
  if (!fs::exists(dir / "SOURCE")) {
    GTEST_SKIP() << "no light models at " << dir << " (scripts/install-deps fetches them)";
  }
  const LightMode& mode = GetParam();
  if (mode.precision == Precision::kF32Split && !ops::coopmat_gemm_available(rt().caps())) {
    GTEST_SKIP() << "fp32-split is the fp32 path on a device without tensor cores";
  }
  EngineOptions options = engine_options(mode.precision);
  options.layout = mode.layout;
  for (const LightModel& m : kModels) {
    SCOPED_TRACE(m.name);
    if (mode.precision == Precision::kF32Split && !m.within_fp16_range) {
      std::printf("light %s (fp32-split): not run, its activations leave fp16's range\n", m.name);
      continue;
    }
    const std::string stem = (dir / (std::string("light_") + m.name)).string();
    Result<Model> model = read_onnx_model(stem + ".onnx");
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    ASSERT_TRUE(unsupported_nodes(*model).empty()) << unsupported_nodes(*model)[0];
    const auto start = std::chrono::steady_clock::now();
    Result<std::unique_ptr<Engine>> engine = Engine::from_model(rt(), std::move(*model), options);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    std::vector<HostTensor> inputs;
    for (const ValueInfo* info : (*engine)->inputs()) inputs.push_back(arange_input(*info));
    Result<std::vector<HostTensor>> got = (*engine)->run(inputs);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (size_t i = 0; i < got->size(); ++i) {
      Result<HostTensor> want = read_tensor_file(stem + "_output_" + std::to_string(i) + ".pb");
      ASSERT_TRUE(want.is_ok()) << want.status().to_string();
      EXPECT_EQ(compare_as_onnx((*got)[i], *want, m.rtol), "") << "output " << i;
    }
    const ChannelsLastCounts& c = (*engine)->channels_last();
    std::printf(
        "light %s (%s): %zu output(s) as stored, %.1f s to load and run; channels-last: %zu "
        "convolutions, %zu transposes\n",
        m.name, mode.name, got->size(), seconds, c.convolutions, c.transposes);
    if (mode.layout == EngineOptions::Layout::kChannelsLast) {
      EXPECT_GT(c.convolutions, 0u) << "every model has convolutions the rewrite takes";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fp32Paths, OnnxLightModels,
                         ::testing::Values(LightMode{"fp32", Precision::kF32, EngineOptions::Layout::kNchw},
                                           LightMode{"fp32_channels_last", Precision::kF32,
                                                     EngineOptions::Layout::kChannelsLast},
                                           LightMode{"fp32_split", Precision::kF32Split, EngineOptions::Layout::kAuto}),
                         [](const ::testing::TestParamInfo<LightMode>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace recon::gpu::onnx
