// recond with two devices (two logical devices of the one lavapipe device): the scheduler spreads
// the pairs of concurrent clients over both workers, each result is fetched from the device that
// made it (into a region imported into every device) with the same bytes whichever it was,
// `GetStatus` shows each device's work, management at run time (LoadModel, UnloadModel) acts on
// every device and answers once, and a device that is lost leaves the rotation while the other
// serves everyone.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include "daemon/ipc/wire_convert.h"
#include "tests/daemon/server/server_harness.h"
#include "tests/daemon/server/test_client.h"
#include "tests/daemon/server/test_expect.h"

namespace recon::daemon::testing {
namespace {

constexpr uint32_t kH = kTinyHeight, kW = kTinyWidth;

std::vector<uint64_t> work_items(TestClient& client) {
  std::vector<uint64_t> out;
  const uint64_t id = client.next_id();
  auto answer = client.call(make_status(id), id);
  if (!answer.is_ok() || answer->type() != wire::ResponseBody::StatusReport) return out;
  for (const wire::DeviceStatus* d : *answer->response->body_as_StatusReport()->devices()) {
    out.push_back(d->work_items());
  }
  return out;
}

// Sends `count` pairs at once and returns their handles (empty on any failure).
std::vector<Id128> run_pairs(TestClient& client, uint64_t first_id, int count, const ImageArg& a, const ImageArg& b) {
  for (int k = 0; k < count; ++k) {
    if (!client.send_frames({make_infer_pair(first_id + k, client.session(), a, b)}).is_ok()) return {};
  }
  std::vector<Id128> handles;
  for (int k = 0; k < count; ++k) {
    auto answer = client.receive(60'000);
    if (!answer.is_ok() || answer->type() != wire::ResponseBody::InferPairResult) return {};
    handles.push_back(handle_id(*answer));
  }
  return handles;
}

TEST(RecondDevices, TwoDevicesShareConcurrentPairsAndGiveTheSameBytes) {
  auto harness = ServerHarness::start(tiny_options(), {}, in_memory_cache(), 2);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto observer = TestClient::connect(harness->dir(), "observer");
  ASSERT_TRUE(observer.is_ok()) << observer.status().to_string();
  ASSERT_EQ(work_items(**observer), (std::vector<uint64_t>{0, 0})) << "two devices, nothing run yet";

  const auto pixels_a = test_image(kH, kW, 31), pixels_b = test_image(kH, kW, 32);
  const ImageArg a{{}, 0, kH, kW, 0, pixels_a}, b{{}, 0, kH, kW, 0, pixels_b};
  constexpr int kClients = 4, kPairs = 4;
  std::vector<std::vector<TensorBytes>> fetched(kClients);
  std::vector<std::string> errors(kClients);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      auto client = TestClient::connect(harness->dir(), "client-" + std::to_string(c));
      if (!client.is_ok()) {
        errors[c] = client.status().to_string();
        return;
      }
      auto region = (*client)->add_region(1 << 20);
      if (!region.is_ok()) {
        errors[c] = region.status().to_string();
        return;
      }
      // Every pair is sent before any answer is read, so that both workers find work queued.
      for (uint64_t k = 1; k <= kPairs; ++k) {
        if (!(*client)->send_frames({make_infer_pair(k, (*client)->session(), a, b)}).is_ok()) errors[c] = "send";
      }
      std::vector<Id128> handles;
      for (int k = 0; k < kPairs; ++k) {
        auto answer = (*client)->receive(60'000);
        if (!answer.is_ok() || answer->type() != wire::ResponseBody::InferPairResult) {
          errors[c] = answer.is_ok() ? answer->error_message() : answer.status().to_string();
          return;
        }
        handles.push_back(handle_id(*answer));
      }
      for (const Id128& handle : handles) {
        const uint64_t id = (*client)->next_id();
        auto out = (*client)->call(
            make_fetch(id, (*client)->session(), handle, {}, RegionDest{region->second, 0, 0, 256}, true), id);
        if (!out.is_ok() || out->type() != wire::ResponseBody::FetchResult) {
          errors[c] = out.is_ok() ? out->error_message() : out.status().to_string();
          return;
        }
        fetched[c].push_back(region_tensors(*out, region->first->data()));
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int c = 0; c < kClients; ++c) ASSERT_TRUE(errors[c].empty()) << "client " << c << ": " << errors[c];

  const std::vector<uint64_t> items = work_items(**observer);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0] + items[1], uint64_t{kClients * kPairs});
  EXPECT_GT(items[0], 0u) << "device 0 ran none of the pairs";
  EXPECT_GT(items[1], 0u) << "device 1 ran none of the pairs";
  const TensorBytes& first = fetched[0][0];
  ASSERT_EQ(first.size(), 8u);
  for (int c = 0; c < kClients; ++c) {
    for (const TensorBytes& result : fetched[c]) EXPECT_EQ(result, first) << "client " << c;
  }
}

TEST(RecondDevices, LoadAndUnloadActOnEveryDeviceAndAnswerOnce) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("recon-devices-repository-" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  std::filesystem::create_symlink(kTinyModel, root / "again.safetensors");
  ServerOptions options = tiny_options();
  options.model_dir = root.string();
  auto harness = ServerHarness::start(options, {}, in_memory_cache(), 2);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto manager = TestClient::connect(harness->dir(), "manager", false, "manager.sock");
  auto client = TestClient::connect(harness->dir(), "user");
  ASSERT_TRUE(manager.is_ok() && client.is_ok());

  auto loaded = (*manager)->call(make_load(1, "again", "again.safetensors"), 1, 60'000);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  ASSERT_EQ(loaded->type(), wire::ResponseBody::LoadModelResult) << loaded->error_message();
  EXPECT_FALSE((*manager)->receive(500).is_ok()) << "a second answer to the one LoadModel";
  // Both devices serve it: pairs sent together, more than one worker takes at once.
  const std::vector<uint64_t> before = work_items(**client);
  const auto pixels = test_image(kH, kW, 33);
  const ImageArg image{{}, 0, kH, kW, 0, pixels};
  InferArgs again;
  again.model = "again";
  for (uint64_t k = 100; k < 108; ++k) {
    ASSERT_TRUE((*client)->send_frames({make_infer_pair(k, (*client)->session(), image, image, again)}).is_ok());
  }
  for (int k = 0; k < 8; ++k) {
    auto answer = (*client)->receive(60'000);
    ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
    EXPECT_EQ(answer->type(), wire::ResponseBody::InferPairResult) << answer->error_message();
  }
  const std::vector<uint64_t> after = work_items(**client);
  ASSERT_EQ(after.size(), 2u);
  EXPECT_GT(after[0], before[0]) << "device 0 did not serve the model loaded at run time";
  EXPECT_GT(after[1], before[1]) << "device 1 did not serve the model loaded at run time";

  auto unloaded = (*manager)->call(make_unload(2, "again"), 2, 60'000);
  ASSERT_TRUE(unloaded.is_ok()) << unloaded.status().to_string();
  EXPECT_EQ(unloaded->type(), wire::ResponseBody::UnloadModelResult) << unloaded->error_message();
  EXPECT_FALSE((*manager)->receive(500).is_ok()) << "a second answer to the one UnloadModel";
  // Gone from both: no device takes its pairs any more.
  for (uint64_t k = 200; k < 204; ++k) {
    auto refused = (*client)->call(make_infer_pair(k, (*client)->session(), image, image, again), k);
    ASSERT_TRUE(refused.is_ok()) << refused.status().to_string();
    EXPECT_EQ(refused->code(), StatusCode::kNotFound) << refused->error_message();
  }
  std::filesystem::remove_all(root);
}

// A GPU the driver reports lost (here: the test hook) leaves the rotation: status says why and the
// daemon is DEGRADED, the results it held fail to fetch with that reason while the other device's
// fetch as before, and every later pair runs on the other device.
TEST(RecondDevices, ALostDeviceLeavesTheRotationAndTheOtherServesEveryone) {
  std::atomic<bool> lose{false};
  ServerHooks hooks;
  hooks.device_lost = [&](size_t device) { return device == 1 && lose.load(); };
  auto harness = ServerHarness::start(tiny_options(), hooks, in_memory_cache(), 2);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto a = TestClient::connect(harness->dir(), "a");
  auto b = TestClient::connect(harness->dir(), "b");
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  const auto pixels = test_image(kH, kW, 34);
  const ImageArg image{{}, 0, kH, kW, 0, pixels};

  // Two clients' pairs at once: both devices hold results.
  std::vector<Id128> held_a, held_b;
  std::thread other([&] { held_b = run_pairs(**b, 1, 4, image, image); });
  held_a = run_pairs(**a, 1, 4, image, image);
  other.join();
  ASSERT_EQ(held_a.size() + held_b.size(), 8u);
  const std::vector<uint64_t> before = work_items(**a);
  ASSERT_EQ(before.size(), 2u);
  ASSERT_GT(before[1], 0u) << "device 1 ran nothing: the test needs results on it";

  lose = true;
  ASSERT_TRUE(wait_for_status(**a, [](const wire::StatusReport& r) {
    return r.devices()->Get(1)->error() != nullptr && r.state() == wire::DaemonState::DEGRADED;
  })) << "device 1 never left the rotation";

  int fetched = 0, lost = 0;
  for (auto* client : {a->get(), b->get()}) {
    for (const Id128& handle : client == a->get() ? held_a : held_b) {
      const uint64_t id = client->next_id();
      auto out = client->call(make_fetch(id, client->session(), handle, {"conf_1"}, std::nullopt), id);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      if (out->type() == wire::ResponseBody::FetchResult) {
        ++fetched;
      } else {
        EXPECT_EQ(out->code(), StatusCode::kUnavailable);
        EXPECT_NE(out->error_message().find("was lost"), std::string::npos) << out->error_message();
        ++lost;
      }
    }
  }
  EXPECT_EQ(fetched, static_cast<int>(before[0])) << "device 0's results fetch as before";
  EXPECT_EQ(lost, static_cast<int>(before[1])) << "device 1's results are gone, with the reason";

  ASSERT_EQ(run_pairs(**a, 100, 6, image, image).size(), 6u) << "pairs after the loss failed";
  const std::vector<uint64_t> after = work_items(**a);
  EXPECT_EQ(after[0], before[0] + 6) << "device 0 serves every later pair";
  EXPECT_EQ(after[1], before[1]) << "the lost device took work";
}

}  // namespace
}  // namespace recon::daemon::testing
