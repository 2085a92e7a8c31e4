// Warming a MASt3R model at a size also builds its device's matchers for that size: a Match
// request on one of its pair results and the reconstruct job's pairwise stage then find their
// recorded matcher instead of recording one (and creating its pipelines) at their first use.
#include <gtest/gtest.h>

#include <vector>

#include "daemon/serving/device.h"
#include "daemon/serving/mast3r/mast3r_instance.h"
#include "daemon/serving/match/match_instance.h"
#include "tests/daemon/server/server_harness.h"

namespace recon::daemon::testing {
namespace {

TEST(DeviceWarmup, AModelWarmedAtASizeBuildsTheMatchersOfItsResultsThere) {
  auto runtime = gpu::Runtime::create(in_memory_cache());
  ASSERT_TRUE(runtime.is_ok()) << runtime.status().to_string();
  Device device(0, **runtime);
  ModelSpec spec;
  spec.name = "mast3r";
  spec.path = kTinyModel;
  ASSERT_TRUE(device.load(spec).is_ok());
  gpu::FastMatcherCache& matchers = device.matcher().matchers();
  EXPECT_EQ(matchers.size(), 0u);
  ASSERT_TRUE(device.warm("mast3r", ImageSize{kTinyHeight, kTinyWidth}, 1).is_ok());
  EXPECT_EQ(matchers.size(), 2u);
  // Other batch sizes of the same size add none.
  ASSERT_TRUE(device.warm("mast3r", ImageSize{kTinyHeight, kTinyWidth}, 2).is_ok());
  EXPECT_EQ(matchers.size(), 2u);

  // The shapes of a real pair's outputs, with the options each user asks for, are those two.
  Mast3rInstance* model = device.loaded<Mast3rInstance>("mast3r");
  ASSERT_NE(model, nullptr);
  std::vector<uint8_t> grey(kTinyWidth * kTinyHeight * 3, 128);
  const gpu::ImageU8View view{grey.data(), kTinyHeight, kTinyWidth, 0};
  auto pair = model->engine().infer(std::span(&view, 1), std::span(&view, 1));
  ASSERT_TRUE(pair.is_ok()) << pair.status().to_string();
  const gpu::Mast3rOutputs& out = pair->tensors;
  const bool fp16 = false;  // the daemon's default precision here: fp32

  gpu::MatchMaps request_maps;  // a Match request on a pair result: every map
  request_maps.pts3d_a = out.pts3d[0];
  request_maps.pts3d_b = out.pts3d[1];
  request_maps.conf_a = out.desc_conf[0];
  request_maps.conf_b = out.desc_conf[1];
  auto request_shape = gpu::MatchShape::of(out.desc[0], out.desc[1], request_maps);
  ASSERT_TRUE(request_shape.is_ok()) << request_shape.status().to_string();
  ASSERT_TRUE(matchers.get(*request_shape, match_options(8, gpu::FastMatchOptions{}.border, fp16)).is_ok());
  EXPECT_EQ(matchers.size(), 2u);

  gpu::MatchMaps job_maps;  // the job: confidences only
  job_maps.conf_a = out.desc_conf[0];
  job_maps.conf_b = out.desc_conf[1];
  auto job_shape = gpu::MatchShape::of(out.desc[0], out.desc[1], job_maps);
  ASSERT_TRUE(job_shape.is_ok()) << job_shape.status().to_string();
  ASSERT_TRUE(matchers.get(*job_shape, match_options(8, kJobMatchBorder, fp16)).is_ok());
  EXPECT_EQ(matchers.size(), 2u);

  // Anything else is another matcher (the count can tell).
  ASSERT_TRUE(matchers.get(*job_shape, match_options(4, kJobMatchBorder, fp16)).is_ok());
  EXPECT_EQ(matchers.size(), 3u);
}

}  // namespace
}  // namespace recon::daemon::testing
