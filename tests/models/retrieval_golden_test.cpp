// The retrieval head (gpu/models/retrieval/) against the PyTorch reference's golden data
// (tests/golden/retrieval, made by tests/reference/retrieval_make_golden.py with the official float64
// whitening). Token indices and pair indices exactly (the maker keeps relative gaps ≥ 1e-4 there);
// values within kTol of the largest reference value of each tensor: fp32 GEMMs over K ≤ 48 terms on
// centred inputs, measured ≤ 3e-7 (docs/RETRIEVAL.md), so 1e-5 leaves a wide margin yet would catch
// any semantic slip (a missing centring, residual or LayerNorm moves values by > 1e-2).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gpu/models/retrieval/retrieval.h"
#include "gpu/ops/layout.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

constexpr double kTol = 5e-5;

// $RECON_GOLDEN_DIR overrides the source tree's path (runs of a carried binary elsewhere).
std::string golden(const std::string& c, const std::string& file) {
  const char* dir = std::getenv("RECON_GOLDEN_DIR");
  return std::string(dir ? dir : RECON_GOLDEN_DIR) + "/retrieval/" + c + "/" + file;
}

std::vector<int32_t> read_i32(const SafetensorsFile& f, const std::string& name) {
  auto bytes = f.bytes(name);
  EXPECT_TRUE(bytes.is_ok()) << name;
  std::vector<int32_t> v(bytes->size() / 4);
  std::memcpy(v.data(), bytes->data(), bytes->size());
  return v;
}

std::vector<int32_t> download_i32(Runtime& rt, const Tensor& t) {
  std::vector<int32_t> v(static_cast<size_t>(t.numel()));
  EXPECT_TRUE(t.download(rt, v.data(), v.size() * 4).is_ok());
  return v;
}

class RetrievalGolden : public testing::GpuTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    auto model = RetrievalModel::load(rt(), golden(GetParam(), "model.safetensors"));
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    model_ = std::move(model).value();
    auto io = SafetensorsFile::open(golden(GetParam(), "io.safetensors"));
    ASSERT_TRUE(io.is_ok()) << io.status().to_string();
    io_ = std::make_unique<SafetensorsFile>(std::move(io).value());
    k_ = std::stoi(std::string(io_->metadata("k").value_or("0")));
  }
  void TearDown() override {
    ops::set_max_binding_bytes_for_testing(0);
    GpuTest::TearDown();
  }
  Tensor tokens(DType dtype) {
    const TensorInfo* t = io_->find("tokens");
    return testing::upload_f32(rt(), dtype, t->shape, io_->read_f32("tokens").value());
  }
  // Runs encode and top_pairs and checks every output against the golden file.
  void check_all(const Tensor& tok) {
    auto out = model_->encode(tok);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    const TensorInfo* f = io_->find("features");
    EXPECT_EQ(out->features.shape(), Shape(f->shape.begin(), f->shape.end()));
    EXPECT_EQ(download_i32(rt(), out->token_index), read_i32(*io_, "token_index"));
    const double ef =
        testing::max_scaled_error(testing::download_f32(rt(), out->features), io_->read_f32("features").value());
    const double ea =
        testing::max_scaled_error(testing::download_f32(rt(), out->attention), io_->read_f32("attention").value());
    const double eg =
        testing::max_scaled_error(testing::download_f32(rt(), out->global), io_->read_f32("global").value());
    EXPECT_LE(ef, kTol);
    EXPECT_LE(ea, kTol);
    EXPECT_LE(eg, kTol);
    auto pairs = model_->top_pairs(out->global, k_);
    ASSERT_TRUE(pairs.is_ok()) << pairs.status().to_string();
    auto host = pairs->to_host(rt());
    ASSERT_TRUE(host.is_ok()) << host.status().to_string();
    EXPECT_EQ(host->indices, read_i32(*io_, "pair_indices"));
    const double es = testing::max_scaled_error(host->similarity, io_->read_f32("similarity").value());
    const double ep = testing::max_scaled_error(host->scores, io_->read_f32("pair_scores").value());
    EXPECT_LE(es, kTol);
    EXPECT_LE(ep, kTol);
    std::printf("[ %s ] scaled error: features %.2e attention %.2e global %.2e similarity %.2e scores %.2e\n",
                GetParam().c_str(), ef, ea, eg, es, ep);
  }

  std::unique_ptr<RetrievalModel> model_;
  std::unique_ptr<SafetensorsFile> io_;
  int k_ = 0;
};

TEST_P(RetrievalGolden, MatchesTheReferenceInFp32) {
  check_all(tokens(DType::kF32));
}

TEST_P(RetrievalGolden, GivesTheSameResultWhenSplitIntoChunksOfImages) {
  // Bindings just large enough for the whole outputs and one image's widest token slab: the
  // token-sized work runs in several chunks of images.
  const TensorInfo* t = io_->find("tokens");
  const TensorInfo* f = io_->find("features");
  int64_t widest = t->shape[2];
  for (int64_t h : model_->config().hdims) widest = std::max(widest, h);
  const int64_t features_bytes = f->shape[0] * f->shape[1] * f->shape[2] * 4;
  ASSERT_LT(features_bytes, t->shape[0] * t->shape[1] * widest * 4) << "no split would happen";
  ops::set_max_binding_bytes_for_testing(static_cast<uint64_t>(std::max(t->shape[1] * widest * 4, features_bytes)));
  check_all(tokens(DType::kF32));
}

TEST_P(RetrievalGolden, TreatsFp16TokensAsTheirExactFp32Values) {
  // f16 → f32 is exact, so f16 tokens must give bit for bit what their f32 copies give.
  std::vector<float> rounded = testing::from_f16(testing::to_f16(io_->read_f32("tokens").value()));
  const TensorInfo* t = io_->find("tokens");
  auto half = model_->encode(testing::upload_f32(rt(), DType::kF16, t->shape, rounded));
  auto full = model_->encode(testing::upload_f32(rt(), DType::kF32, t->shape, rounded));
  ASSERT_TRUE(half.is_ok()) << half.status().to_string();
  ASSERT_TRUE(full.is_ok()) << full.status().to_string();
  EXPECT_EQ(testing::download_f32(rt(), half->features), testing::download_f32(rt(), full->features));
  EXPECT_EQ(testing::download_f32(rt(), half->global), testing::download_f32(rt(), full->global));
  EXPECT_EQ(download_i32(rt(), half->token_index), download_i32(rt(), full->token_index));
}

INSTANTIATE_TEST_SUITE_P(Cases, RetrievalGolden, ::testing::Values("trainingfree", "projector", "tiny_encoder"));

}  // namespace
}  // namespace recon::gpu
