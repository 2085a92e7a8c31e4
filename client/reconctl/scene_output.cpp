// write_scene: .npy per tensor, scene.ply, depth/confidence previews.
#include "scene_output.h"

#include <filesystem>

#include "commands.h"
#include "tools/io/result_writers.h"

namespace reconctl {
namespace {

namespace fs = std::filesystem;
using recon::client::TensorView;

void check(const recon::Status& status, const std::string& path) {
  if (!status.is_ok()) throw LocalFileError("cannot write " + path + ": " + status.message());
}

// The trailing [H, W] (or [H, W, C]) of a tensor shape whose leading axes are all 1.
bool spatial_size(std::span<const uint64_t> shape, size_t channel_axes, uint64_t& height, uint64_t& width) {
  if (shape.size() < 2 + channel_axes) return false;
  for (size_t i = 0; i + 2 + channel_axes < shape.size(); ++i) {
    if (shape[i] != 1) return false;
  }
  height = shape[shape.size() - 2 - channel_axes];
  width = shape[shape.size() - 1 - channel_axes];
  return true;
}

}  // namespace

SceneSummary write_scene(recon::client::Result& result, const std::array<recon::io::Image, 2>& inputs,
                         const std::string& out_dir, float min_conf) {
  SceneSummary summary;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw LocalFileError("cannot create " + out_dir + ": " + ec.message());

  for (const recon::client::TensorInfo& info : result.tensors()) {
    const TensorView view = result.tensor(info.name);
    if (view.dtype() != recon::client::DType::kF32 && view.dtype() != recon::client::DType::kF16 &&
        view.dtype() != recon::client::DType::kBF16) {
      continue;  // the MASt3R outputs are all floating point
    }
    const std::vector<float> values = view.to_float();
    std::vector<int64_t> shape(view.shape().begin(), view.shape().end());
    const std::string path = (fs::path(out_dir) / (info.name + ".npy")).string();
    check(recon::io::write_npy(path, shape, values), path);
    summary.files.push_back(info.name + ".npy");
  }

  std::vector<recon::io::ColoredPoint> cloud;
  for (int v = 0; v < 2; ++v) {
    const std::string suffix = std::to_string(v + 1);
    if (result.find("pts3d_" + suffix) == nullptr || result.find("conf_" + suffix) == nullptr) continue;
    const TensorView pts_view = result.tensor("pts3d_" + suffix);
    const TensorView conf_view = result.tensor("conf_" + suffix);
    uint64_t h = 0, w = 0, ch = 0, cw = 0;
    if (!spatial_size(pts_view.shape(), 1, h, w) || pts_view.shape().back() != 3 ||
        !spatial_size(conf_view.shape(), 0, ch, cw) || ch != h || cw != w) {
      continue;
    }
    const std::vector<float> pts = pts_view.to_float();
    const std::vector<float> conf = conf_view.to_float();
    const recon::io::Image& image = inputs[static_cast<size_t>(v)];
    const bool colours = static_cast<uint64_t>(image.width) == w && static_cast<uint64_t>(image.height) == h;
    std::vector<float> depth(conf.size());
    for (size_t i = 0; i < conf.size(); ++i) {
      depth[i] = pts[i * 3 + 2];
      ++summary.points_total;
      if (!(conf[i] >= min_conf)) continue;
      const uint8_t* c = colours ? &image.pixels[i * 3] : nullptr;
      cloud.push_back({pts[i * 3], pts[i * 3 + 1], pts[i * 3 + 2], c ? c[0] : uint8_t{160}, c ? c[1] : uint8_t{160},
                       c ? c[2] : uint8_t{160}});
    }
    const int width = static_cast<int>(w), height = static_cast<int>(h);
    const std::string depth_path = (fs::path(out_dir) / ("depth_" + suffix + ".png")).string();
    check(recon::io::save_png(depth_path, recon::io::colorize(depth, width, height, true)), depth_path);
    const std::string conf_path = (fs::path(out_dir) / ("conf_" + suffix + ".png")).string();
    check(recon::io::save_png(conf_path, recon::io::colorize(conf, width, height, false)), conf_path);
    summary.files.push_back("depth_" + suffix + ".png");
    summary.files.push_back("conf_" + suffix + ".png");
    if (colours) {
      const std::string input_path = (fs::path(out_dir) / ("input_" + suffix + ".png")).string();
      check(recon::io::save_png(input_path, image), input_path);
      summary.files.push_back("input_" + suffix + ".png");
    }
  }
  if (summary.points_total > 0) {
    const std::string ply = (fs::path(out_dir) / "scene.ply").string();
    check(recon::io::write_ply(ply, cloud), ply);
    summary.files.push_back("scene.ply");
  }
  summary.points_kept = cloud.size();
  return summary;
}

}  // namespace reconctl
