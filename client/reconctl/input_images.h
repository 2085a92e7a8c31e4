// The images reconctl sends: files prepared exactly as the official MASt3R loader does for the
// served model (long side to --size or the model's own, Pillow-exact resampling, centre crop to
// multiples of its patch size, squares cut to 4:3 unless it keeps them; tools/io), or synthetic
// test pictures for `bench`; and their placement in one registered ImageBuffer.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "recon/client/client.h"
#include "tools/io/image_io.h"
#include "tools/io/official_resize.h"

namespace reconctl {

// How images are prepared for a model: the long side and the crop.
struct Preparation {
  int size = 512;
  recon::CropRule crop;
};
// The served model's preparation as the daemon's status gives it (`model` empty: the default
// model, "mast3r"), with `size` (--size) in place of its long side when given. MASt3R's (512,
// 16-pixel patches, squares cut to 4:3) when the daemon does not say. Throws UsageError for a size
// outside 16..4096.
Preparation model_preparation(recon::client::Client& client, const std::string& model,
                              const std::optional<std::string>& size);

// Throws LocalFileError for unreadable files and UsageError for a bad size.
// The prepared images with how they were made from the originals (sizes, crop).
std::vector<recon::io::PreparedImage> load_prepared_originals(const std::vector<std::string>& paths,
                                                              const Preparation& prep, bool verbose);
// Only the prepared pixels.
std::vector<recon::io::Image> load_prepared_images(const std::vector<std::string>& paths, const Preparation& prep,
                                                   bool verbose);
std::array<recon::io::Image, 2> load_prepared_pair(const std::string& a, const std::string& b, const Preparation& prep,
                                                   bool verbose);
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
