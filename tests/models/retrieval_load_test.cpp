// Loading the retrieval head and misuse of encode(): config metadata and its inference from the
// tensor names, refusals that name the tensor or key at fault, and bad token tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "gpu/models/retrieval/retrieval.h"
#include "gpu/weights/safetensors_writer.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

constexpr int64_t kDim = 8;

std::vector<double> identity_f64(int64_t d) {
  std::vector<double> p(static_cast<size_t>(d * d), 0.0);
  for (int64_t i = 0; i < d; ++i) p[i * d + i] = 1.0;
  return p;
}

void add_f64(SafetensorsWriter& w, const std::string& name, std::vector<int64_t> shape, const std::vector<double>& v) {
  ASSERT_TRUE(w.add_tensor(name, Dtype::kF64, std::move(shape), std::as_bytes(std::span(v))).is_ok());
}

void add_whitener(SafetensorsWriter& w, const std::string& prefix, int64_t d) {
  add_f64(w, prefix + ".m", {1, d}, std::vector<double>(static_cast<size_t>(d), 0.5));
  add_f64(w, prefix + ".p", {d, d}, identity_f64(d));
}

class RetrievalLoad : public testing::GpuTest {
 protected:
  Result<std::unique_ptr<RetrievalModel>> load(const SafetensorsWriter& w) {
    auto file = SafetensorsFile::from_bytes(w.serialize());
    EXPECT_TRUE(file.is_ok()) << file.status().to_string();
    return RetrievalModel::from_safetensors(rt(), *file);
  }
  // A head with a 2-layer projector (kDim → 12 → kDim), residual and post-whitening, as metadata.
  static std::string projector_config() {
    return R"({"dim":8,"prewhiten":true,"hdims":[12,8],"residual":true,"postwhiten":true,"nfeat":4})";
  }
  static void add_projector(SafetensorsWriter& w) {
    const std::vector<float> w0(12 * kDim, 0.1f), b0(12, 0.0f), n0(12, 1.0f), w3(kDim * 12, 0.1f), b3(kDim, 0.0f);
    ASSERT_TRUE(w.add_f32("projector.0.weight", {12, kDim}, w0).is_ok());
    ASSERT_TRUE(w.add_f32("projector.0.bias", {12}, b0).is_ok());
    ASSERT_TRUE(w.add_f32("projector.1.weight", {12}, n0).is_ok());
    ASSERT_TRUE(w.add_f32("projector.1.bias", {12}, b0).is_ok());
    ASSERT_TRUE(w.add_f32("projector.3.weight", {kDim, 12}, w3).is_ok());
    ASSERT_TRUE(w.add_f32("projector.3.bias", {kDim}, b3).is_ok());
  }
  // Expects a refusal whose message names `what`.
  void expect_refused(const SafetensorsWriter& w, const std::string& what) {
    auto m = load(w);
    ASSERT_FALSE(m.is_ok());
    EXPECT_NE(m.status().message().find(what), std::string::npos) << m.status().to_string();
  }
};

TEST_F(RetrievalLoad, InfersTheTrainingfreeHeadWithoutMetadata) {
  SafetensorsWriter w;
  add_whitener(w, "prewhiten", kDim);
  auto m = load(w);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  const RetrievalConfig& c = (*m)->config();
  EXPECT_EQ(c.dim, kDim);
  EXPECT_TRUE(c.prewhiten);
  EXPECT_TRUE(c.hdims.empty());
  EXPECT_FALSE(c.postwhiten);
  EXPECT_EQ(c.nfeat, 300);  // the official default
  EXPECT_EQ(c.kept_tokens(20), 20);
}

TEST_F(RetrievalLoad, ReadsTheConfigFromMetadata) {
  SafetensorsWriter w;
  w.add_metadata(kRetrievalMetadataKey, projector_config());
  add_whitener(w, "prewhiten", kDim);
  add_projector(w);
  add_whitener(w, "postwhiten", kDim);
  auto m = load(w);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ((*m)->config().hdims, (std::vector<int64_t>{12, 8}));
  EXPECT_TRUE((*m)->config().residual);
  EXPECT_EQ((*m)->config().kept_tokens(20), 4);
  auto back = RetrievalConfig::from_json((*m)->config().to_json());
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->hdims, (*m)->config().hdims);
}

TEST_F(RetrievalLoad, NamesAMissingTensor) {
  SafetensorsWriter w;
  w.add_metadata(kRetrievalMetadataKey, projector_config());
  add_whitener(w, "prewhiten", kDim);
  add_projector(w);
  expect_refused(w, "missing tensor(s): postwhiten.m, postwhiten.p");
}

TEST_F(RetrievalLoad, NamesAnUnexpectedTensor) {
  SafetensorsWriter w;
  add_whitener(w, "prewhiten", kDim);
  ASSERT_TRUE(w.add_f32("backbone.enc_norm.weight", {kDim}, std::vector<float>(kDim, 1.0f)).is_ok());
  expect_refused(w, "unexpected tensor(s): backbone.enc_norm.weight");
}

TEST_F(RetrievalLoad, NamesAMisShapedTensor) {
  SafetensorsWriter w;
  add_f64(w, "prewhiten.m", {1, kDim}, std::vector<double>(kDim, 0.0));
  add_f64(w, "prewhiten.p", {kDim, kDim + 1}, std::vector<double>(kDim * (kDim + 1), 0.0));
  expect_refused(w, "prewhiten.p is [8, 9], expected [8, 8]");
}

TEST_F(RetrievalLoad, RefusesBadConfigs) {
  for (const std::string& json :
       {std::string(R"({"dim":8,"nfeat":4,"color":1})"), std::string(R"({"dim":8,"residual":true})"),
        std::string(R"({"dim":8,"postwhiten":true})"), std::string(R"({"dim":8,"nfeat":0.5})"),
        std::string(R"({"dim":8,"nfeat":1e30})"), std::string(R"({"dim":8,"featweights":"softmax"})"),
        std::string(R"({"dim":-8})"), std::string("[1]")}) {
    SafetensorsWriter w;
    w.add_metadata(kRetrievalMetadataKey, json);
    add_whitener(w, "prewhiten", kDim);
    auto m = load(w);
    EXPECT_FALSE(m.is_ok()) << json;
  }
}

TEST_F(RetrievalLoad, RefusesAFileWithoutRetrievalTensors) {
  SafetensorsWriter w;
  ASSERT_TRUE(w.add_f32("enc_norm.weight", {kDim}, std::vector<float>(kDim, 1.0f)).is_ok());
  expect_refused(w, "no retrieval tensors");
}

TEST_F(RetrievalLoad, RefusesNonFiniteAndIntegerWeights) {
  SafetensorsWriter w;
  add_f64(w, "prewhiten.m", {1, kDim}, std::vector<double>(kDim, 1e300));  // overflows f32
  add_f64(w, "prewhiten.p", {kDim, kDim}, identity_f64(kDim));
  expect_refused(w, "prewhiten.m has a non-finite value");
  SafetensorsWriter w2;
  add_whitener(w2, "prewhiten", kDim);
  std::vector<int32_t> ints(12 * kDim, 1);
  ASSERT_TRUE(w2.add_tensor("projector.0.weight", Dtype::kI32, {12, kDim}, std::as_bytes(std::span(ints))).is_ok());
  ASSERT_TRUE(w2.add_f32("projector.0.bias", {12}, std::vector<float>(12, 0.0f)).is_ok());
  expect_refused(w2, "projector.0.weight has dtype I32");
}

TEST_F(RetrievalLoad, RefusesAMissingFile) {
  auto m = RetrievalModel::load(rt(), "/nonexistent/retrieval.safetensors");
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
}

TEST_F(RetrievalLoad, EncodeRefusesBadTokens) {
  SafetensorsWriter w;
  w.add_metadata(kRetrievalMetadataKey, R"({"dim":8,"nfeat":-0.01})");
  add_whitener(w, "prewhiten", kDim);
  auto m = load(w);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  RetrievalModel& model = **m;
  auto bad = [&](DType dtype, const Shape& shape) {
    auto t = Tensor::empty(rt(), dtype, shape);
    EXPECT_TRUE(t.is_ok());
    return model.encode(*t).status().code();
  };
  EXPECT_EQ(bad(DType::kF32, {2, 10, kDim + 1}), StatusCode::kInvalidArgument);  // wrong D
  EXPECT_EQ(bad(DType::kI32, {2, 10, kDim}), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(DType::kF32, {1, 2, 10, kDim}), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad(DType::kF32, {kDim}), StatusCode::kInvalidArgument);
  EXPECT_EQ(model.encode(Tensor()).status().code(), StatusCode::kInvalidArgument);
  // nfeat = −0.01 keeps int(0.01·N) tokens: none of 10, one of 100.
  EXPECT_EQ(bad(DType::kF32, {2, 10, kDim}), StatusCode::kInvalidArgument);
  auto one = model.encode(testing::upload_f32(rt(), DType::kF32, {100, kDim}, testing::random_floats(800, 3)));
  ASSERT_TRUE(one.is_ok()) << one.status().to_string();
  EXPECT_EQ(one->features.shape(), (Shape{1, 1, kDim}));
  EXPECT_EQ(one->global.shape(), (Shape{1, kDim}));
}

TEST_F(RetrievalLoad, SurvivesNanTokens) {
  // Results are unspecified (NaN attention has no order) but the call completes and every read
  // stays in bounds (the validation layer would flag otherwise).
  SafetensorsWriter w;
  add_whitener(w, "prewhiten", kDim);
  auto m = load(w);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  std::vector<float> x = testing::random_floats(2 * 10 * kDim, 5);
  for (size_t i = 0; i < x.size(); i += 3) x[i] = std::nanf("");
  auto out = (*m)->encode(testing::upload_f32(rt(), DType::kF32, {2, 10, kDim}, x));
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(out->token_index.shape(), (Shape{2, 10}));
}

}  // namespace
}  // namespace recon::gpu
