// Input images: the official-size arithmetic agrees with tools/io's prepare_official, and
// accept_image checks regions and inline bytes before anything is queued.
#include "daemon/server/image_input.h"

#include <gtest/gtest.h>

#include "daemon/ipc/region_client.h"
#include "daemon/ipc/wire_convert.h"
#include "tools/io/official_resize.h"

namespace recon::daemon {
namespace {

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
  auto pixels = materialize(*image);
  ASSERT_TRUE(pixels.is_ok());
  EXPECT_EQ(pixels->size(), 48u * 64 * 3);
  EXPECT_EQ((*pixels)[0], 42);
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
  auto resized_pixels = materialize(*resized);
  ASSERT_TRUE(resized_pixels.is_ok());
  EXPECT_EQ(resized_pixels->size(), 48u * 64 * 3);
}

}  // namespace
}  // namespace recon::daemon
