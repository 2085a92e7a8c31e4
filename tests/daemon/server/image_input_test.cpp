// Input images: the official-size arithmetic agrees with tools/io's prepare_official,
// accept_image checks regions and inline bytes before anything is queued, and materialize takes
// the zero-copy, staging or CPU path as documented (the CPU when the GPU path fails), with the
// same bytes on each.
#include "daemon/serving/image_input.h"

#include <gtest/gtest.h>

#include "daemon/ipc/region_client.h"
#include "daemon/ipc/wire_convert.h"
#include "daemon/server/wire_inputs.h"
#include "daemon/serving/region_import.h"
#include "gpu/ops/layout.h"
#include "tools/io/official_resize.h"

namespace recon::daemon {
namespace {

const InputPreparation kCpuOnly{};

TEST(ImageSize, AgreesWithPrepareOfficialForManyShapes) {
  const ImageSize inputs[] = {{48, 64},     {75, 100},  {96, 128}, {64, 64},   {480, 640}, {1080, 1920},
                              {1920, 1080}, {333, 500}, {17, 300}, {512, 384}, {384, 512}, {100, 100}};
  for (uint32_t long_side : {64u, 80u, 512u}) {
    for (const ImageSize& in : inputs) {
      io::Image image{static_cast<int>(in.width), static_cast<int>(in.height), 3,
                      std::vector<uint8_t>(size_t{in.width} * in.height * 3, 100)};
      auto prepared = io::prepare_official(image, static_cast<int>(long_side));
      auto size = official_output_size(in, long_side);
      ASSERT_EQ(prepared.is_ok(), size.is_ok()) << in.to_string() << " at " << long_side;
      if (!size.is_ok()) continue;
      EXPECT_EQ(size->width, static_cast<uint32_t>(prepared->image.width)) << in.to_string() << " at " << long_side;
      EXPECT_EQ(size->height, static_cast<uint32_t>(prepared->image.height)) << in.to_string() << " at " << long_side;
    }
  }
  EXPECT_TRUE(is_official_size({48, 64}, 64));
  EXPECT_FALSE(is_official_size({64, 64}, 64)) << "squares are cropped to 4:3";
  EXPECT_FALSE(is_official_size({48, 64}, 512));
}

// DUNE-MASt3R's preparation: 14-pixel patches, squares kept square.
TEST(ImageSize, AgreesWithPrepareOfficialForTheDuneCrop) {
  const CropRule dune{14, /*square_ok=*/true};
  const ImageSize inputs[] = {{48, 64}, {75, 100}, {64, 64}, {480, 640}, {1080, 1920}, {333, 500}, {100, 100}};
  for (uint32_t long_side : {56u, 336u, 448u}) {
    for (const ImageSize& in : inputs) {
      io::Image image{static_cast<int>(in.width), static_cast<int>(in.height), 3,
                      std::vector<uint8_t>(size_t{in.width} * in.height * 3, 100)};
      auto prepared = io::prepare_official(image, static_cast<int>(long_side), dune);
      auto size = official_output_size(in, long_side, dune);
      ASSERT_EQ(prepared.is_ok(), size.is_ok()) << in.to_string() << " at " << long_side;
      if (!size.is_ok()) continue;
      EXPECT_EQ(size->width, static_cast<uint32_t>(prepared->image.width)) << in.to_string() << " at " << long_side;
      EXPECT_EQ(size->height, static_cast<uint32_t>(prepared->image.height)) << in.to_string() << " at " << long_side;
      EXPECT_EQ(size->width % 14, 0u);
      EXPECT_EQ(size->height % 14, 0u);
    }
  }
  EXPECT_TRUE(is_official_size({448, 448}, 448, dune)) << "squares stay square";
  EXPECT_TRUE(is_official_size({336, 448}, 448, dune));
  EXPECT_FALSE(is_official_size({384, 512}, 512, dune)) << "512 is not a multiple of 14";
}

flatbuffers::DetachedBuffer image_message(bool inline_image, Id128 region, uint64_t offset, uint32_t h, uint32_t w,
                                          uint32_t stride, size_t inline_bytes) {
  flatbuffers::FlatBufferBuilder b;
  flatbuffers::Offset<wire::Image> image;
  if (inline_image) {
    const auto data = b.CreateVector(std::vector<uint8_t>(inline_bytes, 1));
    image = wire::CreateImage(b, wire::ImageSource::InlineImage,
                              wire::CreateInlineImage(b, h, w, wire::PixelFormat::RGB8, data).Union());
  } else {
    const wire::Id128 id = to_wire(region);
    image =
        wire::CreateImage(b, wire::ImageSource::ImageRef, wire::CreateImageRef(b, &id, offset, h, w, stride).Union());
  }
  b.Finish(image);
  return b.Release();
}

TEST(ImageInput, LeasesRegionImagesWithinBoundsAndCopiesThemOut) {
  ShmRegistry registry;
  auto fd = create_sealed_memfd("img", 65536);
  ASSERT_TRUE(fd.is_ok());
  auto info = registry.register_region(7, std::move(fd).value(), 0, "img");
  ASSERT_TRUE(info.is_ok());
  std::memset(info->base, 42, 65536);
  ImageRules rules;
  rules.long_side = 64;
  auto message = image_message(false, info->id, 100, 48, 64, 200, 0);
  auto image = accept_image(flatbuffers::GetRoot<wire::Image>(message.data()), "image1", 7, registry, rules);
  ASSERT_TRUE(image.is_ok()) << image.status().to_string();
  EXPECT_FALSE(image->resize);
  EXPECT_EQ(registry.stats().leases, 1u);
  auto pixels = materialize(*image, kCpuOnly);
  ASSERT_TRUE(pixels.is_ok());
  EXPECT_EQ(pixels->path, InputPath::kCpu);
  EXPECT_EQ(pixels->host.size(), 48u * 64 * 3);
  EXPECT_EQ(pixels->host[0], 42);
  EXPECT_EQ(registry.stats().leases, 0u) << "the lease ends once the pixels are copied";
  // Out of bounds, another client's region.
  auto past = image_message(false, info->id, 65536 - 100, 48, 64, 200, 0);
  EXPECT_EQ(accept_image(flatbuffers::GetRoot<wire::Image>(past.data()), "image1", 7, registry, rules).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      accept_image(flatbuffers::GetRoot<wire::Image>(message.data()), "image1", 8, registry, rules).status().code(),
      StatusCode::kNotFound);
  // Inline bytes must match the geometry.
  auto short_inline = image_message(true, {}, 0, 48, 64, 0, 100);
  EXPECT_EQ(accept_image(flatbuffers::GetRoot<wire::Image>(short_inline.data()), "image2", 7, registry, rules)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  auto big_inline = image_message(true, {}, 0, 96, 128, 0, size_t{96} * 128 * 3);
  auto resized = accept_image(flatbuffers::GetRoot<wire::Image>(big_inline.data()), "image2", 7, registry, rules);
  ASSERT_TRUE(resized.is_ok());
  EXPECT_TRUE(resized->resize);
  EXPECT_EQ(resized->target, (ImageSize{48, 64}));
  auto resized_pixels = materialize(*resized, kCpuOnly);
  ASSERT_TRUE(resized_pixels.is_ok());
  EXPECT_EQ(resized_pixels->host.size(), 48u * 64 * 3);
}

TEST(ImageInput, MaterializeTakesTheDocumentedPathAndGivesTheSameBytesOnEach) {
  gpu::RuntimeOptions runtime_options;
  runtime_options.pipeline_cache_path = "none";
  auto rt = gpu::Runtime::create(runtime_options);
  ASSERT_TRUE(rt.is_ok()) << rt.status().to_string();
  ShmRegistry registry;
  auto fd = create_sealed_memfd("img", 1 << 20);
  ASSERT_TRUE(fd.is_ok());
  auto info = registry.register_region(7, std::move(fd).value(), 0, "img");
  ASSERT_TRUE(info.is_ok());
  const bool can_import = (*rt)->caps().external_memory_host;
  if (can_import) {
    auto import = make_region_importer({rt->get()})(*info);
    ASSERT_NE(import, nullptr);
    ASSERT_TRUE(registry.attach(7, info->id, std::move(import)).is_ok());
  }
  // A 130x97 image (rows 400 bytes apart, at an odd offset) becomes 64x48.
  io::Image image{130, 97, 3, std::vector<uint8_t>(size_t{130} * 97 * 3)};
  for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  for (int y = 0; y < 97; ++y) std::memcpy(info->base + 101 + y * 400, &image.pixels[y * 390], 390);
  auto want = io::prepare_official(image, 64);
  ASSERT_TRUE(want.is_ok());
  ImageRules rules;
  rules.long_side = 64;
  auto message = image_message(false, info->id, 101, 97, 130, 400, 0);

  struct Case {
    InputPreparation where;
    InputPath path;
  };
  const Case cases[] = {
      {{rt->get(), 0, true}, can_import ? InputPath::kZeroCopy : InputPath::kStaging},
      {{rt->get(), 1, true}, InputPath::kStaging},  // the import belongs to another device
      {{rt->get(), 0, false}, InputPath::kCpu},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(input_path_name(c.path));
    auto pending = accept_image(flatbuffers::GetRoot<wire::Image>(message.data()), "image1", 7, registry, rules);
    ASSERT_TRUE(pending.is_ok()) << pending.status().to_string();
    auto prepared = materialize(*pending, c.where);
    ASSERT_TRUE(prepared.is_ok()) << prepared.status().to_string();
    EXPECT_EQ(prepared->path, c.path);
    EXPECT_EQ(registry.stats().leases, 0u) << "the lease ends once the GPU or CPU has read the image";
    std::vector<uint8_t> got = prepared->host;
    if (prepared->device.defined()) {
      got.resize(prepared->device.bytes());
      ASSERT_TRUE(prepared->device.download(**rt, got.data(), got.size()).is_ok());
      EXPECT_EQ(prepared->view().device, &prepared->device);
    } else {
      EXPECT_EQ(prepared->view().data, prepared->host.data());
    }
    EXPECT_EQ(got, want->image.pixels);
  }
  // When the GPU path fails (here: not even one source row fits a binding), the CPU takes over.
  gpu::ops::set_max_binding_bytes_for_testing(256);
  auto again = accept_image(flatbuffers::GetRoot<wire::Image>(message.data()), "image1", 7, registry, rules);
  ASSERT_TRUE(again.is_ok());
  auto fallback = materialize(*again, {rt->get(), 0, true});
  gpu::ops::set_max_binding_bytes_for_testing(0);
  ASSERT_TRUE(fallback.is_ok()) << fallback.status().to_string();
  EXPECT_EQ(fallback->path, InputPath::kCpu);
  EXPECT_EQ(fallback->host, want->image.pixels);
  EXPECT_EQ(registry.stats().leases, 0u);

  // An image already at model size that is not imported needs no GPU work: the engine uploads it.
  auto at_size = image_message(true, {}, 0, 48, 64, 0, size_t{48} * 64 * 3);
  auto pending = accept_image(flatbuffers::GetRoot<wire::Image>(at_size.data()), "image2", 7, registry, rules);
  ASSERT_TRUE(pending.is_ok());
  auto prepared = materialize(*pending, {rt->get(), 0, true});
  ASSERT_TRUE(prepared.is_ok());
  EXPECT_EQ(prepared->path, InputPath::kCpu);
  EXPECT_EQ(prepared->host, std::vector<uint8_t>(size_t{48} * 64 * 3, 1));
}

}  // namespace
}  // namespace recon::daemon
