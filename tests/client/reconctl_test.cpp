// reconctl end to end against FakeDaemon: the binary's output, files and exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "fake_daemon.h"
#include "tools/io/image_io.h"

namespace recon::client {
namespace {

namespace fs = std::filesystem;
using test::FakeDaemon;

struct Ran {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

Ran reconctl(const std::string& arguments) {
  const std::string command = std::string(RECONCTL_PATH) + " " + arguments + " 2>&1";
  Ran run;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char chunk[4096];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof(chunk), pipe)) > 0) run.output.append(chunk, n);
  const int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

std::string socket_dir(const FakeDaemon& daemon) {
  return "--socket-dir " + daemon.dir() + " ";
}

// reconctl has exited, so its session is gone and with it every handle; the fake also counts
// explicit releases.
bool eventually_released(const FakeDaemon& daemon) {
  for (int i = 0; i < 200; ++i) {
    if (daemon.counters().handles_alive == 0) return true;
    ::usleep(10'000);
  }
  return false;
}

TEST(Reconctl, StatusPrintsATableAndJson) {
  FakeDaemon daemon;
  const Ran text = reconctl(socket_dir(daemon) + "status");
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("READY"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("FakeGPU 9000"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("512x384, 512x288"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("up 1h 02m"), std::string::npos) << text.output;

  const Ran json = reconctl(socket_dir(daemon) + "status --json");
  EXPECT_EQ(json.exit_code, 0) << json.output;
  EXPECT_EQ(json.output.rfind("{\"server_version\":\"fake-recond 0.1.0\",\"state\":\"READY\"", 0), 0u) << json.output;
  EXPECT_NE(json.output.find("\"pool\":{\"bytes_reserved\":67108864"), std::string::npos) << json.output;

  const Ran sessions = reconctl(socket_dir(daemon) + "status --sessions");
  EXPECT_EQ(sessions.exit_code, 0) << sessions.output;
  EXPECT_EQ(daemon.counters().manager_requests, 1);
}

TEST(Reconctl, ModelsLoadAndUnload) {
  FakeDaemon daemon;
  EXPECT_EQ(reconctl(socket_dir(daemon) + "load extra extra.safetensors --resolution 512x384").exit_code, 0);
  const Ran models = reconctl(socket_dir(daemon) + "models");
  EXPECT_EQ(models.exit_code, 0);
  EXPECT_NE(models.output.find("extra"), std::string::npos) << models.output;
  EXPECT_EQ(reconctl(socket_dir(daemon) + "unload extra").exit_code, 0);
  const Ran again = reconctl(socket_dir(daemon) + "unload extra");
  EXPECT_EQ(again.exit_code, 1) << "a request the daemon refused: " << again.output;
  EXPECT_NE(again.output.find("NOT_FOUND"), std::string::npos) << again.output;
  EXPECT_EQ(reconctl(socket_dir(daemon) + "warmup 512x384").exit_code, 0);
}

TEST(Reconctl, InferWritesArraysPointCloudAndPreviews) {
  FakeDaemon daemon;
  const fs::path dir = fs::path(daemon.dir()) / "work";
  fs::create_directories(dir);
  for (int v = 0; v < 2; ++v) {
    io::Image image;
    image.width = 64;
    image.height = 48;
    image.pixels.resize(size_t{64} * 48 * 3);
    for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<uint8_t>(i * (v + 3) % 256);
    ASSERT_TRUE(io::save_png((dir / ("view" + std::to_string(v) + ".png")).string(), image).is_ok());
  }
  const fs::path out = dir / "out";
  const Ran run = reconctl(socket_dir(daemon) + "infer " + (dir / "view0.png").string() + " " +
                           (dir / "view1.png").string() + " --size 64 --min-conf 0 --out " + out.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const char* name :
       {"pts3d_1.npy", "pts3d_2.npy", "conf_1.npy", "conf_2.npy", "desc_1.npy", "desc_2.npy", "desc_conf_1.npy",
        "desc_conf_2.npy", "scene.ply", "depth_1.png", "depth_2.png", "conf_1.png", "conf_2.png"}) {
    EXPECT_TRUE(fs::exists(out / name)) << name << "\n" << run.output;
  }
  // 64x48 images: 2 * 3072 points, all kept with --min-conf 0.
  EXPECT_NE(run.output.find("6144 of 6144 points"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("timings (daemon)"), std::string::npos) << run.output;
  std::ifstream npy(out / "desc_1.npy", std::ios::binary);
  std::string header(128, '\0');
  npy.read(header.data(), 128);
  EXPECT_NE(header.find("'shape': (48,64,24)"), std::string::npos) << header;
  EXPECT_TRUE(eventually_released(daemon));
}

TEST(Reconctl, BenchReportsThroughputAndPercentiles) {
  FakeDaemon daemon;
  const Ran run = reconctl(socket_dir(daemon) + "bench --pairs 6 --concurrency 3 --resolution 64x48 --fetch");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("pairs/s"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("p99"), std::string::npos) << run.output;
  EXPECT_EQ(daemon.counters().infers, 7) << "one warm-up pair and six measured";
  const Ran json = reconctl(socket_dir(daemon) + "bench --pairs 2 --resolution 64x48 --warmup 0 --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_NE(json.output.find("\"pairs_per_s\":"), std::string::npos) << json.output;
}

TEST(Reconctl, ExitCodesSayWhatWentWrong) {
  EXPECT_EQ(reconctl("--help").exit_code, 0);
  EXPECT_EQ(reconctl("").exit_code, 2);
  EXPECT_EQ(reconctl("frobnicate").exit_code, 2);
  EXPECT_EQ(reconctl("status --bogus").exit_code, 2);
  EXPECT_EQ(reconctl("infer a.png").exit_code, 2);
  EXPECT_EQ(reconctl("warmup 512by384").exit_code, 2);
  const Ran down = reconctl("--socket-dir /nonexistent/recon status");
  EXPECT_EQ(down.exit_code, 3) << down.output;
  EXPECT_NE(down.output.find("is recond running?"), std::string::npos) << down.output;
  EXPECT_EQ(reconctl("--socket-dir /nonexistent/recon wait-ready 0 --quiet").exit_code, 3);

  FakeDaemon daemon;
  const Ran missing = reconctl(socket_dir(daemon) + "infer /nonexistent/a.png /nonexistent/b.png --out /tmp/x");
  EXPECT_EQ(missing.exit_code, 5) << missing.output;
  daemon.fail_next(wire::ErrorCode::UNAVAILABLE, "warming up", 1000);
  EXPECT_EQ(reconctl(socket_dir(daemon) + "status").exit_code, 3) << "UNAVAILABLE from the daemon";
  daemon.fail_next(wire::ErrorCode::PERMISSION_DENIED, "not in group recon-admin");
  EXPECT_EQ(reconctl(socket_dir(daemon) + "warmup").exit_code, 4);
  EXPECT_EQ(reconctl(socket_dir(daemon) + "wait-ready 5").exit_code, 0);
}

}  // namespace
}  // namespace recon::client
