// Loading, preparing and uploading reconctl's input images.
#include "input_images.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "args.h"
#include "commands.h"
#include "every_core.h"
#include "tools/io/official_resize.h"

namespace reconctl {

Preparation model_preparation(recon::client::Client& client, const std::string& model,
                              const std::optional<std::string>& size) {
  Preparation prep;
  const std::string name = model.empty() ? "mast3r" : model;
  for (const recon::client::ModelStatus& m : client.status().models) {
    if (m.name != name || m.image_size == 0 || m.patch_size == 0) continue;
    prep.size = static_cast<int>(m.image_size);
    prep.crop = recon::CropRule{m.patch_size, m.square_ok};
  }
  if (size) {
    char* end = nullptr;
    const long value = std::strtol(size->c_str(), &end, 10);
    if (size->empty() || *end != '\0' || value < 16 || value > 4096) throw UsageError("--size must be in 16..4096");
    prep.size = static_cast<int>(value);
  }
  return prep;
}

std::vector<recon::io::PreparedImage> load_prepared_originals(const std::vector<std::string>& paths,
                                                              const Preparation& prep, bool verbose) {
  const int size = prep.size;
  if (size < 16 || size > 4096) throw UsageError("--size must be in 16..4096");
  // Decoded and prepared on every core (a scene's tens of images), reported in order.
  std::vector<recon::io::PreparedImage> out(paths.size());
  std::vector<std::function<recon::Status()>> tasks;
  for (size_t v = 0; v < paths.size(); ++v) {
    tasks.push_back([&, v]() -> recon::Status {
      auto image = recon::io::load_rgb(paths[v]);
      if (!image.is_ok()) return image.status().with_context("cannot read " + paths[v]);
      auto prepared = recon::io::prepare_official(image.value(), size, prep.crop);
      if (!prepared.is_ok()) return prepared.status().with_context(paths[v]);
      out[v] = std::move(prepared).value();
      return recon::Status::ok();
    });
  }
  const std::vector<recon::Status> loaded = run_on_every_core(tasks);
  for (size_t v = 0; v < paths.size(); ++v) {
    if (!loaded[v].is_ok()) throw LocalFileError(loaded[v].message());
    if (verbose) {
      std::printf("%s %zu: %s  %dx%d -> %dx%d\n", paths.size() == 2 ? "view" : "image", paths.size() == 2 ? v + 1 : v,
                  paths[v].c_str(), out[v].original_width, out[v].original_height, out[v].image.width,
                  out[v].image.height);
    }
  }
  return out;
}

std::vector<recon::io::Image> load_prepared_images(const std::vector<std::string>& paths, const Preparation& prep,
                                                   bool verbose) {
  std::vector<recon::io::Image> out;
  for (recon::io::PreparedImage& prepared : load_prepared_originals(paths, prep, verbose)) {
    out.push_back(std::move(prepared.image));
  }
  return out;
}

std::array<recon::io::Image, 2> load_prepared_pair(const std::string& a, const std::string& b, const Preparation& prep,
                                                   bool verbose) {
  std::vector<recon::io::Image> images = load_prepared_images({a, b}, prep, verbose);
  return {std::move(images[0]), std::move(images[1])};
}

recon::io::Image synthetic_image(int width, int height, int seed) {
  recon::io::Image image;
  image.width = width;
  image.height = height;
  image.channels = 3;
  image.pixels.resize(static_cast<size_t>(width) * height * 3);
  const double phase = seed * 1.7;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const double u = static_cast<double>(x) / width, v = static_cast<double>(y) / height;
      const double checker = ((x / 32 + y / 32) % 2) ? 0.15 : 0.0;
      uint8_t* p = &image.pixels[(static_cast<size_t>(y) * width + x) * 3];
      p[0] = static_cast<uint8_t>(255 * std::clamp(0.2 + 0.6 * u + checker, 0.0, 1.0));
      p[1] = static_cast<uint8_t>(255 * std::clamp(0.5 + 0.4 * std::sin(6.0 * v + phase), 0.0, 1.0));
      p[2] = static_cast<uint8_t>(255 * std::clamp(0.7 - 0.5 * v + checker, 0.0, 1.0));
    }
  }
  return image;
}

ImagesInBuffer upload_images(recon::client::Client& client, const std::vector<recon::io::Image>& images,
                             const std::string& label) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::vector<uint64_t> offsets;
  uint64_t total = 0;
  for (const recon::io::Image& image : images) {
    total = (total + page - 1) / page * page;
    offsets.push_back(total);
    total += static_cast<uint64_t>(image.stride()) * image.height;
  }
  ImagesInBuffer out;
  out.buffer = client.create_buffer(std::max<uint64_t>(total, 1), label);
  for (size_t i = 0; i < images.size(); ++i) {
    out.views.push_back(out.buffer.write_rgb(offsets[i], images[i].pixels.data(),
                                             static_cast<uint32_t>(images[i].width),
                                             static_cast<uint32_t>(images[i].height)));
  }
  return out;
}

PairInBuffer upload_pair(recon::client::Client& client, const std::array<recon::io::Image, 2>& images,
                         const std::string& label) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t first_bytes = static_cast<uint64_t>(images[0].stride()) * images[0].height;
  const uint64_t second_offset = (first_bytes + page - 1) / page * page;
  const uint64_t total = second_offset + static_cast<uint64_t>(images[1].stride()) * images[1].height;
  PairInBuffer out;
  out.buffer = client.create_buffer(total, label);
  out.first = out.buffer.write_rgb(0, images[0].pixels.data(), static_cast<uint32_t>(images[0].width),
                                   static_cast<uint32_t>(images[0].height));
  out.second = out.buffer.write_rgb(second_offset, images[1].pixels.data(), static_cast<uint32_t>(images[1].width),
                                    static_cast<uint32_t>(images[1].height));
  return out;
}

}  // namespace reconctl
