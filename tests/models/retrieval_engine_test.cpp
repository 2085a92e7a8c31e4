// The whole retrieval chain: images → Mast3rEngine::encode (the tiny MASt3R of
// tests/golden/tiny_batch2) → RetrievalModel::encode → top_pairs, against the PyTorch references
// chained the same way (tests/golden/retrieval/tiny_encoder, whose tokens are that case's reference
// encoder outputs). The encoder matches its reference to ~1e-5 in fp32 and this head's whitening is
// well conditioned (singular values 0.5..2), so 1e-3 of the largest value leaves a wide margin;
// the maker keeps index gaps ≥ 1e-3, so the token and pair indices must be equal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gpu/models/mast3r/mast3r_engine.h"
#include "gpu/models/retrieval/retrieval.h"
#include "tests/gpu/gpu_test_util.h"

namespace recon::gpu {
namespace {

constexpr double kTol = 1e-3;

std::vector<int32_t> as_i32(const SafetensorsFile& f, const std::string& name) {
  auto bytes = f.bytes(name);
  std::vector<int32_t> v(bytes.is_ok() ? bytes->size() / 4 : 0);
  if (bytes.is_ok()) std::memcpy(v.data(), bytes->data(), bytes->size());
  return v;
}

class RetrievalEngine : public testing::GpuTest {};

TEST_F(RetrievalEngine, ImagesToPairCandidatesMatchTheChainedReferences) {
  const char* dir = std::getenv("RECON_GOLDEN_DIR");  // overrides the source tree's path
  const std::string golden = dir ? dir : RECON_GOLDEN_DIR;
  auto engine = Mast3rEngine::load(rt(), golden + "/tiny_batch2/model.safetensors", Precision::kF32);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto images = SafetensorsFile::open(golden + "/tiny_batch2/io.safetensors");
  ASSERT_TRUE(images.is_ok()) << images.status().to_string();
  // The head's images are view 1's batch, then view 2's: 4 images of 32×32.
  std::vector<ImageU8View> views;
  for (const char* name : {"img1_u8", "img2_u8"}) {
    const TensorInfo* info = images->find(name);
    ASSERT_NE(info, nullptr);
    const int64_t h = info->shape[1], w = info->shape[2];
    const auto* data = reinterpret_cast<const uint8_t*>(images->data(*info).data());
    for (int64_t b = 0; b < info->shape[0]; ++b) views.push_back({data + b * h * w * 3, h, w, 0});
  }
  auto tokens = (*engine)->encode(views);
  ASSERT_TRUE(tokens.is_ok()) << tokens.status().to_string();

  auto head = RetrievalModel::load(rt(), golden + "/retrieval/tiny_encoder/model.safetensors");
  ASSERT_TRUE(head.is_ok()) << head.status().to_string();
  auto io = SafetensorsFile::open(golden + "/retrieval/tiny_encoder/io.safetensors");
  ASSERT_TRUE(io.is_ok()) << io.status().to_string();
  // Precondition, to tell an encoder divergence from a head one.
  ASSERT_LE(testing::max_scaled_error(testing::download_f32(rt(), *tokens), io->read_f32("tokens").value()), kTol);

  auto out = (*head)->encode(*tokens);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  std::vector<int32_t> idx(static_cast<size_t>(out->token_index.numel()));
  ASSERT_TRUE(out->token_index.download(rt(), idx.data(), idx.size() * 4).is_ok());
  EXPECT_EQ(idx, as_i32(*io, "token_index"));
  EXPECT_LE(testing::max_scaled_error(testing::download_f32(rt(), out->features), io->read_f32("features").value()),
            kTol);
  EXPECT_LE(testing::max_scaled_error(testing::download_f32(rt(), out->attention), io->read_f32("attention").value()),
            kTol);
  EXPECT_LE(testing::max_scaled_error(testing::download_f32(rt(), out->global), io->read_f32("global").value()), kTol);

  const int k = std::stoi(std::string(io->metadata("k").value_or("0")));
  auto pairs = (*head)->top_pairs(out->global, k);
  ASSERT_TRUE(pairs.is_ok()) << pairs.status().to_string();
  auto host = pairs->to_host(rt());
  ASSERT_TRUE(host.is_ok()) << host.status().to_string();
  EXPECT_EQ(host->indices, as_i32(*io, "pair_indices"));
  EXPECT_LE(testing::max_scaled_error(host->scores, io->read_f32("pair_scores").value()), kTol);
}

}  // namespace
}  // namespace recon::gpu
