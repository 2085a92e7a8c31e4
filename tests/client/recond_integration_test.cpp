// librecon against the real recond: starts the daemon in the foreground on a private socket
// directory with the golden tiny model (tests/golden/tiny_same), waits until it is READY, then
// runs a pair, fetches lazily, checks the shapes and values' sanity, releases, and stops the
// daemon with SIGTERM (which must exit 0). Runs on whatever device recond picks (lavapipe in CI).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "recon/client.h"
#include "tests/client/recond_process.h"

namespace recon::client {
namespace {

using namespace std::chrono_literals;
using testing::Recond;
namespace fs = std::filesystem;

TEST(LibreconWithRecond, InfersAPairFetchesLazilyAndReleases) {
  Recond recond(RECON_GOLDEN_MODEL);
  ASSERT_TRUE(recond.wait_ready(600s)) << recond.log();

  {
    Client client = Client::connect(recond.options());
    EXPECT_NE(client.session().server_version.find("recond"), std::string::npos) << client.session().server_version;

    constexpr uint32_t kWidth = 64, kHeight = 48;
    const uint64_t bytes = ImageBuffer::rgb_bytes(kWidth, kHeight);
    ImageBuffer buffer = client.create_buffer(2 * bytes, "integration");
    for (uint64_t i = 0; i < 2 * bytes; ++i) buffer.data()[i] = static_cast<uint8_t>((i * 31 + i / 191) % 256);
    InferOptions options;
    options.resolution = Resolution{kHeight, kWidth};
    Result result = client.infer(buffer.view(0, kWidth, kHeight), buffer.view(bytes, kWidth, kHeight), options).get();

    EXPECT_EQ(result.model(), "mast3r");
    ASSERT_EQ(result.tensors().size(), 8u);
    for (const char* name :
         {"pts3d_1", "pts3d_2", "conf_1", "conf_2", "desc_1", "desc_2", "desc_conf_1", "desc_conf_2"}) {
      EXPECT_NE(result.find(name), nullptr) << name;
    }
    EXPECT_GT(result.timings().compute.count(), 0);

    const TensorView pts = result.tensor("pts3d_1");
    const std::vector<float> xyz = pts.to_float();
    ASSERT_EQ(xyz.size(), size_t{kWidth} * kHeight * 3);
    for (float v : xyz) ASSERT_TRUE(std::isfinite(v));
    const TensorView conf = result.tensor("conf_2");
    for (float v : conf.to_float()) ASSERT_GE(v, 1.0f) << "conf = 1 + exp(x)";
    const TensorView desc = result.tensor("desc_1");
    EXPECT_EQ(desc.shape().back(), 24u);

    // The status shows our session and its handle; releasing frees it.
    const DaemonStatus before = client.status();
    EXPECT_EQ(before.state, DaemonState::kReady);
    EXPECT_GE(before.sessions_open, 1u);
    result.release();
    EXPECT_THROW(result.tensor("desc_2"), Error);

    // A second pair, fetched and released in one round trip.
    Result second = client.infer(buffer.view(0, kWidth, kHeight), buffer.view(bytes, kWidth, kHeight), options).get();
    second.fetch({}, true);
    EXPECT_TRUE(second.released());
    EXPECT_EQ(second.tensor("pts3d_2").elements(), uint64_t{kWidth} * kHeight * 3);
  }
  EXPECT_EQ(recond.stop(), 0) << recond.log();
}

TEST(LibreconWithRecond, InfersABatchMatchesAPairAndReleasesEverything) {
  Recond recond(RECON_GOLDEN_MODEL);
  ASSERT_TRUE(recond.wait_ready(600s)) << recond.log();
  {
    Client client = Client::connect(recond.options());
    constexpr uint32_t kWidth = 64, kHeight = 48;
    const uint64_t bytes = ImageBuffer::rgb_bytes(kWidth, kHeight);
    ImageBuffer buffer = client.create_buffer(3 * bytes, "batch");
    for (uint64_t i = 0; i < 3 * bytes; ++i) buffer.data()[i] = static_cast<uint8_t>((i * 37 + i / 97) % 256);
    const std::vector<ImageView> images = {buffer.view(0, kWidth, kHeight), buffer.view(bytes, kWidth, kHeight),
                                           buffer.view(2 * bytes, kWidth, kHeight)};
    BatchOptions batch;
    batch.pairs = {{0, 2}};
    batch.symmetric = true;
    BatchResult results = client.infer_batch(images, batch).get();
    ASSERT_EQ(results.results.size(), 2u);
    EXPECT_EQ(results.pairs, (std::vector<ImagePair>{{0, 2}, {2, 0}}));
    EXPECT_EQ(results.results[1].timings().batch_size, 2u);

    // Pair (0, 2) of the batch equals the same pair sent alone.
    Result single = client.infer(images[0], images[2]).get();
    const std::vector<float> a = results.results[0].tensor("pts3d_1").to_float();
    const std::vector<float> b = single.tensor("pts3d_1").to_float();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4f * (1 + std::fabs(b[i]))) << i;

    // Matching on the daemon; the match handle holds coordinates inside the images.
    MatchOptions match_options;
    match_options.subsample = 4;
    Result matches = client.match(single, match_options).get();
    EXPECT_EQ(matches.model(), "match");
    const uint64_t count = matches.match_count();
    ASSERT_NE(matches.find("pts3d_2"), nullptr);
    const TensorView xy = matches.tensor("matches_2");
    ASSERT_EQ(xy.as<int32_t>().size(), 2 * count);
    for (uint64_t k = 0; k < count; ++k) {
      EXPECT_LT(static_cast<uint32_t>(xy.as<int32_t>()[2 * k]), kWidth);
      EXPECT_LT(static_cast<uint32_t>(xy.as<int32_t>()[2 * k + 1]), kHeight);
    }

    // The generic request: the same pair by its named inputs, then its match by reference to it.
    const std::vector<ModelInput> pair_inputs = {ModelInput::image("image1", images[0]),
                                                 ModelInput::image("image2", images[2])};
    Result generic = client.infer("mast3r", pair_inputs).get();
    EXPECT_EQ(generic.tensor("pts3d_1").to_float(), b);
    const std::vector<ModelInput> match_inputs = {ModelInput::result("pair", generic)};
    Result generic_matches = client.infer("match", match_inputs, {{"subsample", "4"}}).get();
    EXPECT_EQ(generic_matches.match_count(), count);
    EXPECT_EQ(generic_matches.tensor("matches_2").as<int32_t>().size(), 2 * count);
    const std::vector<ModelInput> misnamed = {ModelInput::result("source", generic)};
    EXPECT_THROW(client.infer("match", misnamed).get(), Error);

    single.release();
    EXPECT_THROW(client.match(single), Error);
    EXPECT_THROW(client.infer_batch(std::span(images.data(), 1)).get(), Error);  // one image, no pairs
  }
  EXPECT_EQ(recond.stop(), 0) << recond.log();
}

TEST(LibreconWithRecond, RunsAReconstructJobWithProgressAndCancelsOneItDrops) {
  // The demo model (trained): the tiny model's random points lie behind the cameras.
  Recond recond((fs::path(RECON_GOLDEN_MODEL).parent_path().parent_path().parent_path().parent_path() / "samples" /
                 "demo-model.safetensors")
                    .string());
  ASSERT_TRUE(recond.wait_ready(600s)) << recond.log();
  {
    Client client = Client::connect(recond.options());
    constexpr uint32_t kWidth = 64, kHeight = 48;
    const uint64_t bytes = ImageBuffer::rgb_bytes(kWidth, kHeight);
    ImageBuffer buffer = client.create_buffer(3 * bytes, "job");
    for (uint64_t i = 0; i < 3 * bytes; ++i) buffer.data()[i] = static_cast<uint8_t>((i * 41 + i / 89) % 256);
    const std::vector<ImageView> images = {buffer.view(0, kWidth, kHeight), buffer.view(bytes, kWidth, kHeight),
                                           buffer.view(2 * bytes, kWidth, kHeight)};
    JobOptions options;
    options.resolution = Resolution{kHeight, kWidth};  // not the demo model's 256
    options.parameters = {{"niter1", "10"}, {"niter2", "10"}};
    Job job = client.start_job(images, options);
    std::vector<std::string> stages;
    while (auto event = job.next()) {
      if (stages.empty() || stages.back() != event->stage) stages.push_back(event->stage);
      EXPECT_LE(event->done, event->total == 0 ? event->done : event->total);
    }
    EXPECT_EQ(stages, (std::vector<std::string>{"encode", "pairs", "align-coarse", "align-fine", "outputs"}));
    EXPECT_TRUE(job.finished());
    Result& result = job.result();
    EXPECT_EQ(result.model(), "reconstruct");
    const auto poses = result.tensor("cam_to_world").as<float>();
    ASSERT_EQ(poses.size(), 3u * 16);
    for (float v : poses) EXPECT_TRUE(std::isfinite(v));
    EXPECT_EQ(result.tensor("pair_matches").shape()[0], 3u);

    // A job dropped while it runs is cancelled: both job slots are free again right after, one for
    // this client and one for another (a client holds one at most). The jobs from here on take two
    // images (one pair): their lives, not their work, are under test.
    const std::span<const ImageView> two(images.data(), 2);
    Client other = Client::connect(recond.options());
    ImageBuffer other_buffer = other.create_buffer(2 * bytes, "job-2");
    std::memcpy(other_buffer.data(), buffer.data(), 2 * bytes);
    const std::vector<ImageView> other_two = {other_buffer.view(0, kWidth, kHeight),
                                              other_buffer.view(bytes, kWidth, kHeight)};
    options.parameters = {{"niter1", "100000"}, {"niter2", "100000"}};
    {
      Job dropped = client.start_job(two, options);
      ASSERT_TRUE(dropped.next().has_value());
    }
    options.parameters = {{"niter1", "2"}, {"niter2", "2"}};
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    bool both_ran = false;
    while (!both_ran && std::chrono::steady_clock::now() < deadline) {
      Job first = client.start_job(two, options);
      Job second = other.start_job(other_two, options);
      try {
        while (first.next()) {
        }
        while (second.next()) {
        }
        both_ran = true;
      } catch (const Error& e) {
        ASSERT_EQ(e.code(), ErrorCode::kResourceExhausted) << e.what();
        std::this_thread::sleep_for(50ms);
      }
    }
    EXPECT_TRUE(both_ran) << "the dropped job still holds a slot";

    // Cancelling ends the job with kCancelled.
    options.parameters = {{"niter1", "100000"}, {"niter2", "100000"}};
    Job cancelled = client.start_job(two, options);
    ASSERT_TRUE(cancelled.next().has_value());
    cancelled.cancel();
    try {
      while (cancelled.next()) {
      }
      ADD_FAILURE() << "a cancelled job finished";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCancelled) << e.what();
    }
  }
  EXPECT_EQ(recond.stop(), 0) << recond.log();
}

}  // namespace
}  // namespace recon::client
