#include "gpu/pipeline_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "gpu/runtime.h"
#include "gpu/shader_registry.h"

namespace recon::gpu {
namespace {

namespace fs = std::filesystem;

class PipelineCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("recon-pc-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    path_ = (dir_ / "pipelines.bin").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Runtime> runtime() {
    RuntimeOptions o;
    o.pipeline_cache_path = path_;
    auto rt = Runtime::create(o);
    EXPECT_TRUE(rt.is_ok()) << rt.status().to_string();
    return std::move(rt).value();
  }
  void build_some_pipelines(Runtime& rt) {
    ASSERT_TRUE(rt.pipelines().get("add_f32").is_ok());
    const uint32_t tile[] = {8};
    ASSERT_TRUE(rt.pipelines().get("matmul_tiled_f32", tile).is_ok());
  }
  std::vector<uint8_t> read_file() {
    std::ifstream in(path_, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void write_file(const std::vector<uint8_t>& bytes) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(PipelineCacheTest, StartsColdThenWarmAfterSave) {
  {
    auto rt = runtime();
    EXPECT_EQ(rt->pipeline_cache().state(), CacheState::kCold);
    build_some_pipelines(*rt);
    ASSERT_TRUE(rt->pipeline_cache().save().is_ok());
  }
  ASSERT_TRUE(fs::exists(path_));
  auto rt = runtime();
  EXPECT_EQ(rt->pipeline_cache().state(), CacheState::kWarm);
  EXPECT_GT(rt->pipeline_cache().loaded_bytes(), 64u);
  build_some_pipelines(*rt);
}

TEST_F(PipelineCacheTest, CorruptedPayloadIsIgnoredWithAReason) {
  {
    auto rt = runtime();
    build_some_pipelines(*rt);
    ASSERT_TRUE(rt->pipeline_cache().save().is_ok());
  }
  auto bytes = read_file();
  // lavapipe's payload is only Vulkan's 32-byte header; flip a byte of the payload either way.
  ASSERT_GT(bytes.size(), 64u);
  bytes[bytes.size() - 1] ^= 0x5a;
  write_file(bytes);
  auto rt = runtime();
  EXPECT_EQ(rt->pipeline_cache().state(), CacheState::kRejected);
  EXPECT_NE(rt->pipeline_cache().rejection_reason().find("checksum"), std::string::npos);
  build_some_pipelines(*rt);  // still works, cold
}

TEST_F(PipelineCacheTest, TruncatedAndGarbageFilesAreIgnored) {
  write_file({1, 2, 3});
  EXPECT_EQ(runtime()->pipeline_cache().state(), CacheState::kRejected);
  write_file(std::vector<uint8_t>(4096, 0x41));
  auto rt = runtime();
  EXPECT_EQ(rt->pipeline_cache().state(), CacheState::kRejected);
  EXPECT_NE(rt->pipeline_cache().rejection_reason().find("magic"), std::string::npos);
}

TEST_F(PipelineCacheTest, SaveReplacesARejectedFile) {
  write_file({9, 9, 9});
  {
    auto rt = runtime();
    build_some_pipelines(*rt);
    ASSERT_TRUE(rt->pipeline_cache().save().is_ok());
  }
  EXPECT_EQ(runtime()->pipeline_cache().state(), CacheState::kWarm);
}

// parse() checks every header field against the device; a cache from elsewhere is refused.
TEST(PipelineCacheHeader, RefusesForeignDeviceDriverUuidOrShaders) {
  Capabilities caps;
  caps.vendor_id = 0x10de;
  caps.device_id = 0x2330;
  caps.driver_version = 42;
  for (uint32_t i = 0; i < VK_UUID_SIZE; ++i) caps.pipeline_cache_uuid[i] = static_cast<uint8_t>(i);
  const uint64_t hash = 1234;
  auto file = PipelineCache::serialize({}, caps, hash);
  EXPECT_TRUE(PipelineCache::parse(file, caps, hash).is_ok());

  Capabilities other = caps;
  other.vendor_id = 0x1002;
  EXPECT_FALSE(PipelineCache::parse(file, other, hash).is_ok());
  other = caps;
  other.driver_version = 43;
  EXPECT_FALSE(PipelineCache::parse(file, other, hash).is_ok());
  other = caps;
  other.pipeline_cache_uuid[3] ^= 1;
  EXPECT_FALSE(PipelineCache::parse(file, other, hash).is_ok());
  EXPECT_FALSE(PipelineCache::parse(file, caps, hash + 1).is_ok());
}

TEST(PipelineCacheHeader, RefusesAPayloadWhoseVulkanHeaderIsForeign) {
  Capabilities caps;
  caps.vendor_id = 5;
  // A payload of the right size whose embedded Vulkan header names another vendor.
  std::vector<uint8_t> payload(64, 0);
  payload[0] = 32;
  payload[4] = 1;
  payload[8] = 6;
  auto file = PipelineCache::serialize(payload, caps, 1);
  auto r = PipelineCache::parse(file, caps, 1);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("Vulkan cache header"), std::string::npos);
}

TEST(ShaderRegistry, EveryVariantIsValidSpirvAndTheHashIsStable) {
  ASSERT_FALSE(all_shaders().empty());
  for (const auto& s : all_shaders()) {
    ASSERT_GE(s.word_count, 5u) << s.name;
    EXPECT_EQ(s.words[0], 0x07230203u) << s.name << " lacks the SPIR-V magic";
  }
  EXPECT_EQ(shader_set_hash(), shader_set_hash());
  EXPECT_NE(find_shader("add_f32"), nullptr);
  EXPECT_EQ(find_shader("no_such_shader"), nullptr);
}

TEST(PipelineRegistry, UnknownShaderIsNotFound) {
  RuntimeOptions o;
  o.pipeline_cache_path = "none";
  auto rt = Runtime::create(o);
  ASSERT_TRUE(rt.is_ok());
  auto p = rt.value()->pipelines().get("no_such_shader");
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
}

TEST(PipelineRegistry, SameKeyReturnsTheSamePipeline) {
  RuntimeOptions o;
  o.pipeline_cache_path = "none";
  auto rt = Runtime::create(o);
  ASSERT_TRUE(rt.is_ok());
  auto& reg = rt.value()->pipelines();
  const uint32_t a[] = {8}, b[] = {16};
  auto p1 = reg.get("matmul_tiled_f32", a);
  auto p2 = reg.get("matmul_tiled_f32", a);
  auto p3 = reg.get("matmul_tiled_f32", b);
  ASSERT_TRUE(p1.is_ok() && p2.is_ok() && p3.is_ok());
  EXPECT_EQ(p1.value(), p2.value());
  EXPECT_NE(p1.value(), p3.value());
  EXPECT_EQ(reg.pipeline_count(), 2u);
}

}  // namespace
}  // namespace recon::gpu
