// The images reconctl sends: files prepared exactly as the official MASt3R loader does (long side
// to --size with Pillow-exact resampling, centre crop to multiples of 16; tools/io), or synthetic
// test pictures for `bench`; and their placement in one registered ImageBuffer.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "recon/client/client.h"
#include "tools/io/image_io.h"
#include "tools/io/official_resize.h"

namespace reconctl {

// Throws LocalFileError for unreadable files and UsageError for a bad size.
// The prepared images with how they were made from the originals (sizes, crop).
std::vector<recon::io::PreparedImage> load_prepared_originals(const std::vector<std::string>& paths, int size,
                                                              bool verbose);
// Only the prepared pixels.
std::vector<recon::io::Image> load_prepared_images(const std::vector<std::string>& paths, int size, bool verbose);
std::array<recon::io::Image, 2> load_prepared_pair(const std::string& a, const std::string& b, int size, bool verbose);
// A smooth, textured RGB picture of width x height (deterministic per seed).
recon::io::Image synthetic_image(int width, int height, int seed);

struct PairInBuffer {
  recon::client::ImageBuffer buffer;
  recon::client::ImageView first, second;
};
struct ImagesInBuffer {
  recon::client::ImageBuffer buffer;
  std::vector<recon::client::ImageView> views;
};
// One buffer holding every image, each starting at a page boundary.
ImagesInBuffer upload_images(recon::client::Client& client, const std::vector<recon::io::Image>& images,
                             const std::string& label);
// One buffer holding both images (the second at the next page boundary).
PairInBuffer upload_pair(recon::client::Client& client, const std::array<recon::io::Image, 2>& images,
                         const std::string& label);

}  // namespace reconctl
