// recond serving the tiny DUNE-MASt3R model (tests/golden/dune_same) as the "mast3r" kind, through
// the same harness, client and expectations as the ViT-L model (server_e2e_test.cpp): pairs sent at
// the model's input size and pairs the daemon prepares itself (14-pixel crops, squares kept) give
// the bytes of the in-process engine run on the officially prepared images.
#include <gtest/gtest.h>

#include "tests/daemon/server/server_harness.h"
#include "tests/daemon/server/test_client.h"
#include "tests/daemon/server/test_expect.h"
#include "tools/io/official_resize.h"

namespace recon::daemon::testing {
namespace {

struct Case {
  uint32_t height, width;     // as sent
  uint32_t model_h, model_w;  // after the official preparation at 56 with 14-pixel patches
};

// The official loader's preparation for the DUNE model (square_ok, patch 14), or the pixels
// themselves when they are already at model size (the daemon then copies them, as Pillow would).
std::vector<uint8_t> prepared(const std::vector<uint8_t>& pixels, const Case& c) {
  if (c.height == c.model_h && c.width == c.model_w) return pixels;
  io::Image image{static_cast<int>(c.width), static_cast<int>(c.height), 3, pixels};
  auto p = io::prepare_official(image, kTinyDuneSide, CropRule{14, /*square_ok=*/true});
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  return p.is_ok() ? p->image.pixels : std::vector<uint8_t>{};
}

TEST(RecondDune, ServesPairsAtAndAwayFromTheModelSizeAsTheInProcessEngine) {
  auto harness = ServerHarness::start(tiny_options(kTinyDuneModel));
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto engine = gpu::Mast3rEngine::load(harness->runtime(), kTinyDuneModel, gpu::Precision::kF32);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto client = TestClient::connect(harness->dir(), "dune");
  ASSERT_TRUE(client.is_ok()) << client.status().to_string();
  TestClient& c = **client;

  const Case cases[] = {
      {42, 56, 42, 56},  // at model size: copied as it is
      {60, 80, 42, 56},  // resized to 56x42 by the daemon
      {70, 70, 56, 56},  // square: stays square (a ViT-L model would cut it to 4:3)
      {50, 33, 56, 28},  // portrait, resized up; width 37 cropped to 28
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(std::to_string(k.width) + "x" + std::to_string(k.height));
    const auto a = test_image(k.height, k.width, 7), b = test_image(k.height, k.width, 8);
    const uint64_t id = c.next_id();
    auto answer = c.call(
        make_infer_pair(id, c.session(), {{}, 0, k.height, k.width, 0, a}, {{}, 0, k.height, k.width, 0, b}), id);
    ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
    ASSERT_EQ(answer->type(), wire::ResponseBody::InferPairResult) << answer->error_message();
    const wire::ResultHandle* handle = answer->response->body_as_InferPairResult()->handle();
    for (const wire::TensorInfo* t : *handle->tensors()) {
      if (t->name()->str() != "desc_1") continue;
      EXPECT_EQ(std::vector<uint64_t>(t->shape()->begin(), t->shape()->end()),
                (std::vector<uint64_t>{k.model_h, k.model_w, 24}));
    }
    const uint64_t fid = c.next_id();
    auto fetched = c.call(make_fetch(fid, c.session(), handle_id(*answer), {}, std::nullopt, /*release=*/true), fid);
    ASSERT_TRUE(fetched.is_ok());
    ASSERT_EQ(fetched->type(), wire::ResponseBody::FetchResult) << fetched->error_message();
    const TensorBytes got = inline_tensors(*fetched);
    const TensorBytes want =
        engine_outputs(harness->runtime(), **engine, prepared(a, k), prepared(b, k), k.model_h, k.model_w);
    ASSERT_EQ(want.size(), 8u);
    for (const auto& [name, bytes] : want) {
      ASSERT_TRUE(got.count(name)) << name;
      EXPECT_EQ(got.at(name), bytes) << name << " differs from the in-process engine";
    }
  }
}

}  // namespace
}  // namespace recon::daemon::testing
