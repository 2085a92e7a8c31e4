// recond in-process: the three image paths (image_input.h) — zero-copy (the region imported into
// the GPU), staging (one upload, GPU resize), CPU (copy-out, CPU resize) — give byte-identical
// results, equal to the in-process engine on the CPU preparation; RegisterRegion reports which
// one a region gets; a region unregistered while a request reads it in place stays imported and
// mapped until that request is done; regions that cannot be imported are refused as before.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "daemon/ipc/region_client.h"
#include "daemon/ipc/wire_convert.h"
#include "tests/daemon/server/server_harness.h"
#include "tests/daemon/server/test_client.h"
#include "tests/daemon/server/test_expect.h"
#include "tests/daemon/server/worker_gate.h"
#include "tools/io/official_resize.h"

namespace recon::daemon::testing {
namespace {

constexpr uint32_t kH = kTinyHeight, kW = kTinyWidth;

ServerOptions options_for(bool import_regions, bool gpu_preprocess) {
  ServerOptions o = tiny_options();
  o.import_regions = import_regions;
  o.gpu_preprocess = gpu_preprocess;
  return o;
}

void write_image(uint8_t* base, uint64_t offset, const std::vector<uint8_t>& pixels, uint32_t h, uint32_t w,
                 uint32_t stride) {
  for (size_t y = 0; y < h; ++y) std::memcpy(base + offset + y * stride, pixels.data() + y * w * 3, size_t{w} * 3);
}

// Two images not at model size (portrait and landscape, odd sizes, padded rows at odd offsets)
// in one region; the daemon resizes both to 64x48.
struct Scene {
  io::Image a{101, 77, 3, test_image(77, 101, 21)};
  io::Image b{130, 97, 3, test_image(97, 130, 22)};
  uint32_t stride_a = 101 * 3 + 7, stride_b = 130 * 3 + 1;
  uint64_t offset_a = 13, offset_b = (32 << 10) + 5;
  ImageArg arg_a(const Id128& r) const { return {r, offset_a, 77, 101, stride_a, {}}; }
  ImageArg arg_b(const Id128& r) const { return {r, offset_b, 97, 130, stride_b, {}}; }
};

struct Served {
  bool zero_copy = false;
  TensorBytes outputs;
};

// Registers a region on a fresh daemon with `options`, infers the scene's pair and fetches it.
Served serve_scene(const ServerOptions& options, const Scene& scene) {
  Served served;
  auto harness = ServerHarness::start(options);
  EXPECT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "zero-copy");
  EXPECT_TRUE(client.is_ok()) << client.status().to_string();
  if (!client.is_ok()) return served;
  auto memory = TestRegion::create(1 << 20);
  EXPECT_TRUE(memory.is_ok());
  if (!memory.is_ok()) return served;
  auto region = (*client)->regions().register_region((*memory)->fd(), (*memory)->size(), "scene");
  EXPECT_TRUE(region.is_ok()) << region.status().to_string();
  if (!region.is_ok()) return served;
  served.zero_copy = region->zero_copy;
  write_image((*memory)->data(), scene.offset_a, scene.a.pixels, 77, 101, scene.stride_a);
  write_image((*memory)->data(), scene.offset_b, scene.b.pixels, 97, 130, scene.stride_b);
  const uint64_t id = (*client)->next_id();
  auto answer =
      (*client)->call(make_infer_pair(id, (*client)->session(), scene.arg_a(region->id), scene.arg_b(region->id)), id);
  EXPECT_TRUE(answer.is_ok());
  if (!answer.is_ok()) return served;
  EXPECT_EQ(answer->type(), wire::ResponseBody::InferPairResult) << answer->error_message();
  if (answer->type() != wire::ResponseBody::InferPairResult) return served;
  const uint64_t fid = (*client)->next_id();
  auto fetched =
      (*client)->call(make_fetch(fid, (*client)->session(), handle_id(*answer), {}, std::nullopt, true), fid);
  EXPECT_TRUE(fetched.is_ok());
  if (fetched.is_ok()) served.outputs = inline_tensors(*fetched);
  return served;
}

TEST(RecondZeroCopy, AllThreeImagePathsGiveTheCpuPreparationsResultByteForByte) {
  const Scene scene;
  const Served zero_copy = serve_scene(options_for(true, true), scene);
  const Served staging = serve_scene(options_for(false, true), scene);
  const Served cpu = serve_scene(options_for(true, false), scene);

  auto rt = gpu::Runtime::create(in_memory_cache());
  ASSERT_TRUE(rt.is_ok());
  auto engine = gpu::Mast3rEngine::load(**rt, kTinyModel, gpu::Precision::kF32);
  ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
  auto pa = io::prepare_official(scene.a, 64), pb = io::prepare_official(scene.b, 64);
  ASSERT_TRUE(pa.is_ok() && pb.is_ok());
  const TensorBytes expected = engine_outputs(**rt, **engine, pa->image.pixels, pb->image.pixels, kH, kW);
  ASSERT_EQ(expected.size(), 8u);

  // lavapipe and NVIDIA both import; a device without the extension would answer false.
  EXPECT_EQ(zero_copy.zero_copy, (*rt)->caps().external_memory_host);
  EXPECT_FALSE(staging.zero_copy);
  EXPECT_EQ(cpu.zero_copy, (*rt)->caps().external_memory_host);  // imported, but prepared on the CPU
  EXPECT_EQ(zero_copy.outputs, expected) << "zero-copy path";
  EXPECT_EQ(staging.outputs, expected) << "staging path";
  EXPECT_EQ(cpu.outputs, expected) << "CPU path";
}

TEST(RecondZeroCopy, ARegionUnregisteredWhileARequestReadsItInPlaceStaysUntilTheRequestEnds) {
  WorkerGate gate;
  ServerHooks hooks;
  hooks.before_batch = [&] { gate.wait(); };
  auto harness = ServerHarness::start(tiny_options(), hooks);
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "unregister");
  ASSERT_TRUE(client.is_ok()) << client.status().to_string();
  auto memory = TestRegion::create(256 << 10);
  ASSERT_TRUE(memory.is_ok());
  auto region = (*client)->regions().register_region((*memory)->fd(), (*memory)->size(), "doomed");
  ASSERT_TRUE(region.is_ok()) << region.status().to_string();
  const Scene scene;
  write_image((*memory)->data(), scene.offset_a, scene.a.pixels, 77, 101, scene.stride_a);
  write_image((*memory)->data(), scene.offset_b, scene.b.pixels, 97, 130, scene.stride_b);

  const uint64_t id = (*client)->next_id();
  ASSERT_TRUE(
      (*client)
          ->send_frames({make_infer_pair(id, (*client)->session(), scene.arg_a(region->id), scene.arg_b(region->id))})
          .is_ok());
  ASSERT_TRUE(wait_for_status(**client, [](const wire::StatusReport& r) { return r.queue()->in_flight() == 1; }));
  // The request holds the region: unregistering defers the unmap (and the import's release).
  auto deferred = (*client)->regions().unregister_region(region->id);
  ASSERT_TRUE(deferred.is_ok()) << deferred.status().to_string();
  EXPECT_TRUE(*deferred);
  // The id stops resolving at once for new requests.
  const uint64_t late = (*client)->next_id();
  auto refused = (*client)->call(
      make_infer_pair(late, (*client)->session(), scene.arg_a(region->id), scene.arg_b(region->id)), late);
  ASSERT_TRUE(refused.is_ok());
  EXPECT_EQ(refused->code(), StatusCode::kNotFound) << refused->error_message();

  gate.release();
  auto answer = (*client)->receive();
  ASSERT_TRUE(answer.is_ok()) << answer.status().to_string();
  ASSERT_EQ(answer->response->request_id(), id);
  ASSERT_EQ(answer->type(), wire::ResponseBody::InferPairResult) << answer->error_message();
  EXPECT_TRUE(wait_for_status(**client, [](const wire::StatusReport& r) { return r.region_bytes() == 0; }))
      << "the region outlived its last request";

  // The result is the right one: the pages were read before they went away.
  auto pa = io::prepare_official(scene.a, 64), pb = io::prepare_official(scene.b, 64);
  ASSERT_TRUE(pa.is_ok() && pb.is_ok());
  auto engine = gpu::Mast3rEngine::load(harness->runtime(), kTinyModel, gpu::Precision::kF32);
  ASSERT_TRUE(engine.is_ok());
  const uint64_t fid = (*client)->next_id();
  auto fetched =
      (*client)->call(make_fetch(fid, (*client)->session(), handle_id(*answer), {}, std::nullopt, true), fid);
  ASSERT_TRUE(fetched.is_ok());
  EXPECT_EQ(inline_tensors(*fetched),
            engine_outputs(harness->runtime(), **engine, pa->image.pixels, pb->image.pixels, kH, kW));
}

TEST(RecondZeroCopy, RegionsThatCannotBeSafelyImportedAreRefusedAsBefore) {
  auto harness = ServerHarness::start();
  ASSERT_TRUE(harness->error().empty()) << harness->error();
  auto client = TestClient::connect(harness->dir(), "refused");
  ASSERT_TRUE(client.is_ok()) << client.status().to_string();

  // A memfd without the shrink seal could be truncated under the import: refused, never imported.
  const int unsealed = ::memfd_create("unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(unsealed, 0);
  ASSERT_EQ(::ftruncate(unsealed, 64 << 10), 0);
  auto refused = (*client)->regions().register_region(unsealed, 64 << 10, "unsealed");
  EXPECT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << refused.status().to_string();

  // A write-sealed memfd could only be mapped read-only — never imported on NVIDIA: refused too.
  const int write_sealed = ::memfd_create("write-sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(write_sealed, 0);
  ASSERT_EQ(::ftruncate(write_sealed, 64 << 10), 0);
  ASSERT_EQ(::fcntl(write_sealed, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE), 0);
  auto refused_too = (*client)->regions().register_region(write_sealed, 64 << 10, "write-sealed");
  EXPECT_FALSE(refused_too.is_ok());
  EXPECT_EQ(refused_too.status().code(), StatusCode::kInvalidArgument) << refused_too.status().to_string();
  ::close(unsealed);
  ::close(write_sealed);

  // After the refusals the daemon still imports and serves regions.
  auto memory = TestRegion::create(64 << 10);
  ASSERT_TRUE(memory.is_ok());
  auto region = (*client)->regions().register_region((*memory)->fd(), (*memory)->size(), "fine");
  ASSERT_TRUE(region.is_ok()) << region.status().to_string();
  EXPECT_EQ(region->zero_copy, harness->runtime().caps().external_memory_host);
  const auto pixels = test_image(kH, kW, 30);
  std::memcpy((*memory)->data(), pixels.data(), pixels.size());
  const ImageArg image{region->id, 0, kH, kW, kW * 3, {}};
  const uint64_t id = (*client)->next_id();
  auto answer = (*client)->call(make_infer_pair(id, (*client)->session(), image, image), id);
  ASSERT_TRUE(answer.is_ok());
  EXPECT_EQ(answer->type(), wire::ResponseBody::InferPairResult) << answer->error_message();
}

}  // namespace
}  // namespace recon::daemon::testing
