// reconctl reconstruct's files: see reconstruct_output.h.
#include "reconstruct_output.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>

#include "commands.h"
#include "every_core.h"
#include "tools/io/result_writers.h"
#include "tools/io/scene_picture.h"

namespace reconctl {

namespace fs = std::filesystem;
using recon::client::Result;

namespace {

// Model-resolution pixels (centres at integer coordinates, as the daemon answers) → the original
// image's pixels in COLMAP's convention (centres at +0.5): the official preparation resized the
// image, then cropped it (tools/io/official_resize.h).
struct PixelMap {
  double sx = 1, sy = 1, ox = 0, oy = 0;
  explicit PixelMap(const recon::io::PreparedImage& image)
      : sx(static_cast<double>(image.original_width) / image.resized_width),
        sy(static_cast<double>(image.original_height) / image.resized_height),
        ox(image.crop_x + 0.5),
        oy(image.crop_y + 0.5) {}
  double x(double model_x) const { return (model_x + ox) * sx; }
  double y(double model_y) const { return (model_y + oy) * sy; }
};

void check(const recon::Status& status) {
  if (!status.is_ok()) throw LocalFileError(status.message());
}

}  // namespace

recon::io::Scene scene_from_result(Result& result, const std::vector<recon::io::PreparedImage>& images,
                                   const std::vector<std::string>& names) {
  const auto cam_to_world = result.tensor("cam_to_world").as<float>();
  const auto intrinsics = result.tensor("intrinsics").as<float>();
  const auto component = result.tensor("component").as<int32_t>();
  const auto points = result.tensor("points").as<float>();
  const auto pixels = result.tensor("point_pixels").as<int32_t>();
  const auto conf = result.tensor("point_conf").as<float>();
  if (component.size() != images.size()) {
    throw recon::client::Error(recon::client::ErrorCode::kInternal, recon::client::ErrorSource::kDaemon,
                               "the reconstruction has " + std::to_string(component.size()) + " cameras for " +
                                   std::to_string(images.size()) + " images");
  }
  // Pixels map back to the originals through the preparation reconctl made: the daemon must have
  // run every image at exactly that size.
  const auto hw = result.tensor("image_hw").as<int32_t>();
  for (size_t i = 0; i < images.size(); ++i) {
    const recon::io::Image& prepared = images[i].image;
    if (hw.size() != 2 * images.size() || hw[2 * i] != prepared.height || hw[2 * i + 1] != prepared.width) {
      throw recon::client::Error(recon::client::ErrorCode::kInternal, recon::client::ErrorSource::kDaemon,
                                 "the daemon ran image " + std::to_string(i) + " at another size than the " +
                                     std::to_string(prepared.width) + "x" + std::to_string(prepared.height) +
                                     " reconctl prepared (images of different shapes need the "
                                     "model's own --size)");
    }
  }
  recon::io::Scene scene;
  std::vector<PixelMap> maps;
  for (size_t i = 0; i < images.size(); ++i) {
    const PixelMap map(images[i]);
    maps.push_back(map);
    recon::io::SceneCamera camera;
    camera.image_name = names[i];
    camera.width = images[i].original_width;
    camera.height = images[i].original_height;
    const float* k = &intrinsics[9 * i];
    camera.fx = k[0] * map.sx;
    camera.fy = k[4] * map.sy;
    camera.cx = map.x(k[2]);
    camera.cy = map.y(k[5]);
    std::copy(&cam_to_world[16 * i], &cam_to_world[16 * i] + 16, camera.cam_to_world.begin());
    camera.component = component[i];
    scene.cameras.push_back(camera);
  }
  scene.points.reserve(conf.size());  // a million points and more: growing the vector cost more than filling it
  for (size_t p = 0; p < conf.size(); ++p) {
    const int image = pixels[3 * p];
    if (image < 0 || static_cast<size_t>(image) >= images.size() || component[image] != 0) continue;
    const int x = pixels[3 * p + 1], y = pixels[3 * p + 2];
    const recon::io::Image& rgb = images[image].image;
    if (x < 0 || y < 0 || x >= rgb.width || y >= rgb.height) continue;
    recon::io::ScenePoint point;
    point.x = points[3 * p];
    point.y = points[3 * p + 1];
    point.z = points[3 * p + 2];
    const uint8_t* c = &rgb.pixels[(static_cast<size_t>(y) * rgb.width + x) * 3];
    point.r = c[0];
    point.g = c[1];
    point.b = c[2];
    point.confidence = conf[p];
    point.track.push_back({image, static_cast<float>(maps[image].x(x)), static_cast<float>(maps[image].y(y))});
    scene.points.push_back(std::move(point));
  }
  return scene;
}

ReconstructSummary write_reconstruction(Result& result, const std::vector<recon::io::PreparedImage>& images,
                                        const std::vector<std::string>& paths, const std::string& out_dir,
                                        size_t max_colmap_points) {
  result.fetch();
  std::vector<std::string> names;
  for (const std::string& path : paths) names.push_back(fs::path(path).filename().string());
  const recon::io::Scene scene = scene_from_result(result, images, names);

  ReconstructSummary summary;
  summary.cameras = scene.cameras.size();
  for (const auto& camera : scene.cameras) {
    summary.cameras_placed += camera.component == 0 ? 1 : 0;
    summary.components = std::max(summary.components, camera.component + 1);
  }
  summary.points = scene.points.size();
  std::error_code error;
  const fs::path out(out_dir);
  fs::create_directories(out / "sparse" / "0", error);
  fs::create_directories(out / "depth", error);
  if (error) throw LocalFileError("cannot create " + out_dir + ": " + error.message());

  // Every file is a task of its own, run on every core: encoding the PNGs (the depth previews
  // above all) is most of the files' time.
  std::vector<std::function<recon::Status()>> tasks;
  tasks.push_back([&] { return recon::io::write_cameras_json((out / "cameras.json").string(), scene); });
  summary.files.push_back((out / "cameras.json").string());

  // COLMAP: the largest component's cameras (other components have frames of their own) and at
  // most max_colmap_points points, evenly thinned.
  recon::io::Scene colmap;
  std::map<int, int> camera_index;
  for (size_t i = 0; i < scene.cameras.size(); ++i) {
    if (scene.cameras[i].component != 0) continue;
    camera_index[static_cast<int>(i)] = static_cast<int>(colmap.cameras.size());
    colmap.cameras.push_back(scene.cameras[i]);
  }
  const size_t stride = std::max<size_t>(1, (scene.points.size() + max_colmap_points - 1) / max_colmap_points);
  colmap.points.reserve((scene.points.size() + stride - 1) / stride);
  for (size_t p = 0; p < scene.points.size(); p += stride) {
    recon::io::ScenePoint point = scene.points[p];
    for (auto& observation : point.track) observation.camera = camera_index.at(observation.camera);
    colmap.points.push_back(std::move(point));
  }
  tasks.push_back([&] { return recon::io::write_colmap_text((out / "sparse" / "0").string(), colmap); });
  summary.files.push_back((out / "sparse" / "0").string());
  tasks.push_back([&] { return recon::io::write_scene_ply((out / "scene.ply").string(), scene); });
  summary.files.push_back((out / "scene.ply").string());
  tasks.push_back([&] {
    return recon::io::save_png((out / "scene.png").string(), recon::io::render_scene_overview(colmap, 1600, 600));
  });
  summary.files.push_back((out / "scene.png").string());

  const auto hw = result.tensor("image_hw").as<int32_t>();
  const auto depth = result.tensor("depth").as<float>();
  size_t offset = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const int h = hw[2 * i], w = hw[2 * i + 1];
    const std::span<const float> map = depth.subspan(offset, static_cast<size_t>(h) * w);
    offset += map.size();
    const fs::path stem = out / "depth" / fs::path(names[i]).stem();
    tasks.push_back([map, h, w, stem]() -> recon::Status {
      const int64_t shape[2] = {h, w};
      RECON_RETURN_IF_ERROR(recon::io::write_npy(stem.string() + ".npy", shape, map));
      return recon::io::save_png(stem.string() + ".png", recon::io::colorize(map, w, h, true));
    });
  }
  summary.files.push_back((out / "depth").string());
  for (const recon::Status& status : run_on_every_core(tasks)) check(status);
  return summary;
}

}  // namespace reconctl
