// The MASt3R forward pass against the PyTorch reference's golden data (tests/golden, made by
// tests/reference/make_golden.py in float64): fp32 within 1e-4 (the DUNE-MASt3R cases, dune_*,
// within 1e-5), fp16 within 2e-2, per output, as max |got − want| / max |want|. On failure the intermediate taps say
// where the first divergence is.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "gpu/models/mast3r/mast3r_engine.h"
#include "gpu/weights/safetensors.h"
#include "gpu/weights/safetensors_writer.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

using testing::GpuTest;

const std::string kGoldenDir = RECON_GOLDEN_DIR;

struct GoldenCase {
  std::string name;
  Precision precision;
  double tolerance;
};

void PrintTo(const GoldenCase& c, std::ostream* os) {
  *os << c.name << "/" << precision_name(c.precision);
}

class Mast3rGoldenTest : public GpuTest, public ::testing::WithParamInterface<GoldenCase> {};

TEST_P(Mast3rGoldenTest, MatchesTheReference) {
  const GoldenCase& gc = GetParam();
  const std::string dir = kGoldenDir + "/" + gc.name;
  auto engine = Mast3rEngine::load(rt(), dir + "/model.safetensors", gc.precision);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto io = SafetensorsFile::open(dir + "/io.safetensors");
  ASSERT_TRUE(io.is_ok()) << io.status().to_string();

  // Images: (H, W, 3) for batch 1, (B, H, W, 3) otherwise.
  std::array<std::vector<ImageU8View>, 2> views;
  std::array<Result<std::span<const std::byte>>, 2> bytes = {io->bytes("img1_u8"), io->bytes("img2_u8")};
  for (int v = 0; v < 2; ++v) {
    ASSERT_TRUE(bytes[v].is_ok());
    const TensorInfo* info = io->find(v == 0 ? "img1_u8" : "img2_u8");
    const auto& s = info->shape;
    const int64_t batch = s.size() == 4 ? s[0] : 1, h = s[s.size() - 3], w = s[s.size() - 2];
    for (int64_t b = 0; b < batch; ++b) {
      views[v].push_back({reinterpret_cast<const uint8_t*>(bytes[v]->data()) + b * h * w * 3, h, w, 0});
    }
  }
  auto result = engine.value()->infer(views[0], views[1]);
  ASSERT_TRUE(result.is_ok()) << result.status().to_string();

  const auto outputs = result->tensors.list();
  bool all_ok = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string name = Mast3rOutputs::kNames[i];
    auto want = io->read_f32(name);
    ASSERT_TRUE(want.is_ok()) << name;
    const double err = testing::max_scaled_error(testing::download_f32(rt(), *outputs[i]), want.value());
    EXPECT_LE(err, gc.tolerance) << gc.name << " " << name;
    all_ok = all_ok && err <= gc.tolerance;
    RecordProperty(name, std::to_string(err));
  }
  if (all_ok) return;
  // Locate the first diverging intermediate.
  for (const TensorInfo& t : io->tensors()) {
    if (t.name.rfind("tap.", 0) != 0) continue;
    const Tensor* mine = engine.value()->tap(result->shape, t.name.substr(4));
    if (mine == nullptr) continue;
    const double err = testing::max_scaled_error(testing::download_f32(rt(), *mine), io->read_f32(t.name).value());
    ADD_FAILURE() << "tap " << t.name << ": error " << err;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Golden, Mast3rGoldenTest,
    ::testing::Values(GoldenCase{"tiny_same", Precision::kF32, 1e-4}, GoldenCase{"tiny_mixed", Precision::kF32, 1e-4},
                      GoldenCase{"tiny_batch2", Precision::kF32, 1e-4}, GoldenCase{"tiny_same", Precision::kF16, 2e-2},
                      GoldenCase{"tiny_mixed", Precision::kF16, 2e-2},
                      GoldenCase{"tiny_same", Precision::kF16Heads, 2e-2},
                      GoldenCase{"tiny_mixed", Precision::kF16Heads, 2e-2},
                      GoldenCase{"dune_same", Precision::kF32, 1e-5}, GoldenCase{"dune_mixed", Precision::kF32, 1e-5},
                      GoldenCase{"dune_batch2", Precision::kF32, 1e-5}, GoldenCase{"dune_same", Precision::kF16, 2e-2},
                      GoldenCase{"dune_mixed", Precision::kF16, 2e-2}, GoldenCase{"dune_batch2", Precision::kF16, 2e-2},
                      GoldenCase{"dune_same", Precision::kF16Heads, 2e-2},
                      GoldenCase{"dune_mixed", Precision::kF16Heads, 2e-2}),
    [](const auto& info) {
      std::string p = precision_name(info.param.precision);
      std::replace(p.begin(), p.end(), '-', '_');
      return info.param.name + "_" + p;
    });

class Mast3rEngineTest : public GpuTest {};

TEST_F(Mast3rEngineTest, CorruptWeightFileIsAClearErrorNamingIt) {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / ("recon-trunc-" + std::to_string(::getpid()) + ".safetensors");
  fs::copy_file(kGoldenDir + "/tiny_same/model.safetensors", tmp, fs::copy_options::overwrite_existing);
  fs::resize_file(tmp, fs::file_size(tmp) / 2);
  auto engine = Mast3rEngine::load(rt(), tmp.string(), Precision::kF32);
  fs::remove(tmp);
  ASSERT_FALSE(engine.is_ok());
  EXPECT_EQ(engine.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(engine.status().message().find(tmp.filename().string()), std::string::npos) << engine.status().message();
}

// A DUNE-MASt3R file whose tensors do not fit its config is refused at load, naming each tensor.
TEST_F(Mast3rEngineTest, MisShapedDuneWeightsAreAClearErrorNamingThem) {
  auto good = SafetensorsFile::open(kGoldenDir + "/dune_same/model.safetensors");
  ASSERT_TRUE(good.is_ok()) << good.status().to_string();
  SafetensorsWriter bad;
  bad.add_metadata(std::string(Mast3rConfig::kMetadataKey), std::string(*good->metadata(Mast3rConfig::kMetadataKey)));
  for (const TensorInfo& t : good->tensors()) {
    if (t.name == "norm.bias") continue;  // missing
    std::vector<int64_t> shape = t.shape;
    if (t.name == "dune_backbone.pos_embed") shape = {1, shape[1] - 1, shape[2]};  // one row short
    const auto bytes = good->data(t);
    const size_t keep =
        t.name == "dune_backbone.pos_embed" ? bytes.size() - static_cast<size_t>(shape[2]) * 4 : bytes.size();
    ASSERT_TRUE(bad.add_tensor(t.name, t.dtype, shape, bytes.first(keep)).is_ok()) << t.name;
  }
  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / ("recon-dune-bad-" + std::to_string(::getpid()) + ".safetensors");
  ASSERT_TRUE(bad.write(tmp.string()).is_ok());
  auto engine = Mast3rEngine::load(rt(), tmp.string(), Precision::kF32);
  std::filesystem::remove(tmp);
  ASSERT_FALSE(engine.is_ok());
  EXPECT_EQ(engine.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = engine.status().message();
  EXPECT_NE(m.find("DUNE"), std::string::npos) << m;
  EXPECT_NE(m.find("missing: norm.bias"), std::string::npos) << m;
  EXPECT_NE(m.find("wrong shape: dune_backbone.pos_embed: expected [1, 17, 32], found [1, 16, 32]"), std::string::npos)
      << m;
}

TEST_F(Mast3rEngineTest, WrongImageSizesAreRefused) {
  auto engine = Mast3rEngine::load(rt(), kGoldenDir + "/tiny_same/model.safetensors", Precision::kF32);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  std::vector<uint8_t> px(50 * 50 * 3, 7);
  ImageU8View odd{px.data(), 50, 50, 0};  // not a multiple of the patch size
  auto r = engine.value()->infer(std::span(&odd, 1), std::span(&odd, 1));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  auto none = engine.value()->infer({}, {});
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace recon::gpu
