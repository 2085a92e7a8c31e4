// recond.conf and the command line: a valid file, strict errors with file:line, flags over file.
#include "daemon/service/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/daemon_service/test_support.h"

namespace recon::daemon {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

constexpr const char* kFullConfig = R"(# a complete file
[gpu]
device = "NVIDIA H200"   # quoted: spaces kept
precision = fp16
pipeline_cache = /var/cache/recon/pc.bin

[models]
mast3r = /models/mast3r.safetensors
retrieval = /models/retrieval.safetensors

[warmup]
resolutions = 512x384, 512x288

[limits]
; semicolon comments too
max_queue = 32
max_clients = 8
max_regions_per_client = 4
max_region_bytes = 256MiB
max_client_bytes = 1GiB
max_total_region_bytes = 4GiB
max_handles_per_client = 16
handle_ttl = 90s

[sockets]
client = /run/r/c.sock
regions = /run/r/r.sock
manager = /run/r/m.sock
client_group = users
manager_group = wheel

[network]
tcp = 0.0.0.0:7600
metrics_port = 9464

[log]
level = debug
)";

Result<DaemonConfig> parse(const std::string& text) {
  return parse_config(text, "/etc/recon/recond.conf");
}

std::string error_of(const Result<DaemonConfig>& r) {
  return r.is_ok() ? "(parsed)" : r.status().message();
}

// argv from strings, as main() gets it.
Result<CommandLine> run(std::vector<std::string> args) {
  args.insert(args.begin(), "recond");
  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const std::string& a : args) argv.push_back(a.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

std::string write_file(const TempDir& dir, const std::string& text) {
  std::string path = dir.file("recond.conf");
  std::ofstream(path) << text;
  return path;
}

TEST(ConfigFile, ParsesEverySection) {
  auto config = parse(kFullConfig);
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->device, "NVIDIA H200");
  EXPECT_EQ(config->precision, gpu::Precision::kF16);
  EXPECT_EQ(config->pipeline_cache, PipelineCacheMode::kPath);
  EXPECT_EQ(config->pipeline_cache_path, "/var/cache/recon/pc.bin");
  ASSERT_EQ(config->models.size(), 2u);
  EXPECT_EQ(config->models[0], (ModelSource{"mast3r", "/models/mast3r.safetensors"}));
  EXPECT_EQ(config->models[1].name, "retrieval");
  EXPECT_EQ(config->warmup, (std::vector<Resolution>{{512, 384}, {512, 288}}));
  EXPECT_EQ(config->max_queue, 32u);
  EXPECT_EQ(config->max_clients, 8u);
  EXPECT_EQ(config->max_regions_per_client, 4u);
  EXPECT_EQ(config->max_region_bytes, 256u << 20);
  EXPECT_EQ(config->max_client_bytes, uint64_t{1} << 30);
  EXPECT_EQ(config->max_total_region_bytes, uint64_t{4} << 30);
  EXPECT_EQ(config->max_handles_per_client, 16u);
  EXPECT_EQ(config->handle_ttl, 90s);
  EXPECT_EQ(config->client_socket, "/run/r/c.sock");
  EXPECT_EQ(config->regions_socket, "/run/r/r.sock");
  EXPECT_EQ(config->manager_socket, "/run/r/m.sock");
  EXPECT_EQ(config->client_group, "users");
  EXPECT_EQ(config->manager_group, "wheel");
  ASSERT_TRUE(config->tcp.has_value());
  EXPECT_EQ(config->tcp->zmq_endpoint(), "tcp://0.0.0.0:7600");
  EXPECT_EQ(config->metrics_port, 9464);
  EXPECT_EQ(config->log_level, LogLevel::kDebug);
}

TEST(ConfigFile, EmptyFileGivesTheDefaults) {
  auto config = parse("# nothing\n\n");
  ASSERT_TRUE(config.is_ok());
  EXPECT_EQ(*config, DaemonConfig{});
  EXPECT_EQ(config->client_socket, "/run/recon/client.sock");
  EXPECT_FALSE(config->tcp.has_value());
  EXPECT_EQ(config->metrics_port, 0);
}

TEST(ConfigFile, UnknownKeyNamesFileLineAndSuggestion) {
  EXPECT_EQ(error_of(parse("[limits]\nmax_queue = 4\nmax_quue = 8\n")),
            "/etc/recon/recond.conf:3: unknown key 'max_quue' in [limits] (did you mean 'max_queue'?)");
}

TEST(ConfigFile, KeyInTheWrongSectionSaysWhereItBelongs) {
  EXPECT_EQ(error_of(parse("[gpu]\nmax_queue = 4\n")),
            "/etc/recon/recond.conf:2: unknown key 'max_queue' in [gpu] (it belongs in [limits])");
}

TEST(ConfigFile, UnknownSectionIsAnError) {
  EXPECT_EQ(error_of(parse("\n[limit]\n")),
            "/etc/recon/recond.conf:2: unknown section [limit] (did you mean 'limits'?)");
  EXPECT_EQ(error_of(parse("[bogus]\n")), "/etc/recon/recond.conf:1: unknown section [bogus]");
}

TEST(ConfigFile, BadValueNamesLineAndKey) {
  EXPECT_EQ(error_of(parse("[limits]\n\nmax_clients = 0\n")),
            "/etc/recon/recond.conf:3: max_clients: expected a whole number from 1 to 4096, got '0'");
  EXPECT_EQ(error_of(parse("[gpu]\nprecision = bf16\n")),
            "/etc/recon/recond.conf:2: precision: expected fp32, fp32-split, fp16 or fp16-heads, got 'bf16'");
  EXPECT_EQ(error_of(parse("[warmup]\nresolutions = 512x384, 500x300\n")),
            "/etc/recon/recond.conf:2: resolutions: width 500 of '500x300' is not a multiple of the 16-pixel "
            "patch size");
}

TEST(ConfigFile, KeyGivenTwiceIsAnError) {
  EXPECT_EQ(error_of(parse("[limits]\nmax_queue = 4\n[gpu]\n[limits]\nmax_queue = 8\n")),
            "/etc/recon/recond.conf:5: 'max_queue' in [limits] was already set on line 2");
  EXPECT_EQ(error_of(parse("[models]\nmast3r = /a\nmast3r = /b\n")),
            "/etc/recon/recond.conf:3: 'mast3r' in [models] was already set on line 2");
}

TEST(ConfigFile, RejectsMalformedLines) {
  EXPECT_EQ(error_of(parse("max_queue = 4\n")), "/etc/recon/recond.conf:1: key 'max_queue' comes before any [section]");
  EXPECT_EQ(error_of(parse("[limits]\nmax_queue 4\n")),
            "/etc/recon/recond.conf:2: expected 'key = value' or '[section]', got 'max_queue 4'");
  EXPECT_EQ(error_of(parse("[limits\n")), "/etc/recon/recond.conf:1: expected '[section]', got '[limits'");
  EXPECT_EQ(error_of(parse("[gpu]\ndevice = \"H200\n")), "/etc/recon/recond.conf:2: device: unterminated quote");
}

TEST(ConfigFile, ModelsNeedValidNamesAndAbsolutePaths) {
  EXPECT_EQ(error_of(parse("[models]\nmast3r = models/m.safetensors\n")),
            "/etc/recon/recond.conf:2: mast3r: model 'mast3r': path 'models/m.safetensors' must be absolute "
            "(recond runs with / as its working directory)");
  EXPECT_FALSE(parse("[models]\nMASt3R = /m.safetensors\n").is_ok());
}

TEST(ConfigFile, CommentsAfterValuesAndHashesInsideQuotes) {
  auto config = parse("[gpu]\ndevice = \"GPU #2\" # the second one\n[sockets]\nclient = /run/a#b.sock # hash kept\n");
  ASSERT_TRUE(config.is_ok()) << config.status().to_string();
  EXPECT_EQ(config->device, "GPU #2");
  EXPECT_EQ(config->client_socket, "/run/a#b.sock");
}

TEST(ConfigFile, CrossChecksLimitsAndSockets) {
  EXPECT_EQ(error_of(parse("[limits]\nmax_region_bytes = 16GiB\n")),
            "/etc/recon/recond.conf: max_region_bytes (16GiB) exceeds max_client_bytes (8GiB): such a region "
            "could never be registered");
  EXPECT_EQ(error_of(parse("[sockets]\nmanager = /run/recon/client.sock\n")),
            "/etc/recon/recond.conf: the client and manager sockets are both /run/recon/client.sock");
  EXPECT_FALSE(parse("[network]\ntcp = *:9000\nmetrics_port = 9000\n").is_ok());
}

TEST(ConfigFile, MissingExplicitFileIsAnError) {
  auto config = load_config_file("/nonexistent-recon/recond.conf");
  ASSERT_FALSE(config.is_ok());
  EXPECT_EQ(config.status().code(), StatusCode::kNotFound);
  EXPECT_NE(config.status().message().find("/nonexistent-recon/recond.conf"), std::string::npos);
}

TEST(ConfigFile, FormatConfigParsesBackToTheSameConfig) {
  auto config = parse(kFullConfig);
  ASSERT_TRUE(config.is_ok());
  const std::string text = format_config(*config);
  auto again = parse(text);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string() << "\n" << text;
  EXPECT_EQ(*again, *config);
  EXPECT_EQ(parse(format_config(DaemonConfig{})).value(), DaemonConfig{});
}

TEST(CommandLine, FlagsOverrideTheFile) {
  TempDir dir;
  const std::string path = write_file(dir, kFullConfig);
  auto line = run({"--config", path, "--max-queue", "8", "--model", "mast3r=/other/m.safetensors", "--model=match=/m",
                   "--warmup=512x256", "--warmup", "512x160", "--precision=fp32", "--tcp", "off", "--foreground"});
  ASSERT_TRUE(line.is_ok()) << line.status().to_string();
  EXPECT_EQ(line->config_path, path);
  EXPECT_TRUE(line->foreground);
  const DaemonConfig& c = line->config;
  EXPECT_EQ(c.max_queue, 8u);
  EXPECT_EQ(c.max_clients, 8u);  // from the file
  EXPECT_EQ(c.precision, gpu::Precision::kF32);
  EXPECT_FALSE(c.tcp.has_value());
  EXPECT_EQ(c.models,
            (std::vector<ModelSource>{
                {"mast3r", "/other/m.safetensors"}, {"retrieval", "/models/retrieval.safetensors"}, {"match", "/m"}}));
  EXPECT_EQ(c.warmup, (std::vector<Resolution>{{512, 256}, {512, 160}}));  // the file's list replaced
}

TEST(CommandLine, WorksWithoutAConfigFile) {
  auto line = run({"--config", "/dev/null", "--client-socket", "/tmp/c.sock", "--metrics-port", "9464", "--handle-ttl",
                   "10min", "--max-region-bytes", "1GiB", "--log-level", "warning"});
  ASSERT_TRUE(line.is_ok()) << line.status().to_string();
  EXPECT_EQ(line->config.client_socket, "/tmp/c.sock");
  EXPECT_EQ(line->config.metrics_port, 9464);
  EXPECT_EQ(line->config.handle_ttl, 10min);
  EXPECT_EQ(line->config.max_region_bytes, uint64_t{1} << 30);
  EXPECT_EQ(line->config.log_level, LogLevel::kWarning);
}

TEST(CommandLine, MakesRelativePathsAbsolute) {
  auto line = run({"--config", "/dev/null", "--model", "mast3r=weights/m.safetensors", "--pipeline-cache", "pc.bin"});
  ASSERT_TRUE(line.is_ok()) << line.status().to_string();
  const std::string cwd = std::filesystem::current_path().string();
  EXPECT_EQ(line->config.models.at(0).path, cwd + "/weights/m.safetensors");
  EXPECT_EQ(line->config.pipeline_cache_path, cwd + "/pc.bin");
}

TEST(CommandLine, ErrorsNameTheFlag) {
  EXPECT_EQ(run({"--config", "/dev/null", "--max-queu", "4"}).status().message(),
            "unknown option --max-queu (did you mean 'max-queue'?) (see --help)");
  EXPECT_EQ(run({"--config", "/dev/null", "--max-queue"}).status().message(), "--max-queue needs a value (N)");
  EXPECT_EQ(run({"--config", "/dev/null", "--max-queue=0"}).status().message(),
            "--max-queue: expected a whole number from 1 to 65536, got '0'");
  EXPECT_EQ(run({"--config", "/dev/null", "--model", "mast3r"}).status().message(),
            "--model: expected NAME=PATH, got 'mast3r'");
  EXPECT_EQ(run({"--config", "/dev/null", "--precision", "fp8"}).status().message(),
            "--precision: expected fp32, fp32-split, fp16 or fp16-heads, got 'fp8'");
  EXPECT_EQ(run({"--config", "/dev/null", "--foreground=yes"}).status().message(), "--foreground takes no value");
  EXPECT_EQ(run({"stray"}).status().message(), "unexpected argument 'stray': recond takes only --options (see --help)");
  EXPECT_EQ(run({"--config", "/dev/null", "--manager-socket", "/run/recon/client.sock"}).status().message(),
            "/dev/null and command line: the client and manager sockets are both /run/recon/client.sock");
}

TEST(CommandLine, FileErrorsKeepTheirFileAndLine) {
  TempDir dir;
  const std::string path = write_file(dir, "[limits]\nmax_queue = many\n");
  EXPECT_EQ(run({"--config", path}).status().message(),
            path + ":2: max_queue: expected a whole number from 1 to 65536, got 'many'");
}

TEST(CommandLine, MissingExplicitConfigIsAnError) {
  auto line = run({"--config", "/nonexistent-recon/recond.conf"});
  ASSERT_FALSE(line.is_ok());
  EXPECT_EQ(line.status().code(), StatusCode::kNotFound);
}

TEST(CommandLine, HelpReadsNothingElse) {
  auto line = run({"--config", "/nonexistent-recon/recond.conf", "--max-queue", "0", "--help"});
  ASSERT_TRUE(line.is_ok()) << line.status().to_string();
  EXPECT_TRUE(line->help);
}

TEST(CommandLine, CheckConfigIsAFlag) {
  auto line = run({"--config", "/dev/null", "--check-config"});
  ASSERT_TRUE(line.is_ok());
  EXPECT_TRUE(line->check_config);
  EXPECT_FALSE(line->foreground);
}

TEST(Usage, ListsEveryFlag) {
  const std::string text = usage("recond");
  for (const char* flag : {"--config",
                           "--foreground",
                           "--check-config",
                           "--help",
                           "--device",
                           "--model NAME=PATH",
                           "--warmup",
                           "--precision",
                           "--max-queue",
                           "--max-clients",
                           "--max-regions-per-client",
                           "--max-region-bytes",
                           "--max-client-bytes",
                           "--max-total-region-bytes",
                           "--max-handles-per-client",
                           "--handle-ttl",
                           "--client-socket",
                           "--regions-socket",
                           "--manager-socket",
                           "--client-group",
                           "--manager-group",
                           "--tcp",
                           "--metrics-port",
                           "--pipeline-cache",
                           "--log-level"}) {
    EXPECT_NE(text.find(flag), std::string::npos) << flag;
  }
}

TEST(PipelineCacheFile, FollowsCacheDirectoryInAutoMode) {
  DaemonConfig config;
  EXPECT_EQ(pipeline_cache_file(config, "/var/cache/recon", "/home/x/.cache/p.bin"),
            "/var/cache/recon/pipeline-cache.bin");
  EXPECT_EQ(pipeline_cache_file(config, "/var/cache/recon:/var/cache/other", "f"),
            "/var/cache/recon/pipeline-cache.bin");
  EXPECT_EQ(pipeline_cache_file(config, nullptr, "/home/x/.cache/p.bin"), "/home/x/.cache/p.bin");
  config.pipeline_cache = PipelineCacheMode::kOff;
  EXPECT_EQ(pipeline_cache_file(config, "/var/cache/recon", "f"), "");
  config.pipeline_cache = PipelineCacheMode::kPath;
  config.pipeline_cache_path = "/srv/pc.bin";
  EXPECT_EQ(pipeline_cache_file(config, "/var/cache/recon", "f"), "/srv/pc.bin");
}

}  // namespace
}  // namespace recon::daemon
