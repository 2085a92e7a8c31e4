// recon-infer: runs MASt3R on one image pair in-process (no daemon) and writes what it produces:
// the eight outputs as .npy, a confidence-filtered coloured point cloud (scene.ply), depth and
// confidence previews (PNG), and the per-stage GPU timing breakdown.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gpu/models/mast3r/mast3r_engine.h"
#include "tools/io/official_resize.h"
#include "tools/io/result_writers.h"

namespace {

using recon::Result;
using recon::Status;

constexpr const char* kUsage =
    "usage: recon-infer --model M.safetensors [--size N] [--precision fp32|fp16|fp16-heads] [--device D]\n"
    "                   [--min-conf C] A.png B.png --out DIR\n"
    "  --size       the official loader's size: the long side (default: the model's, 512 for MASt3R,\n"
    "               448 for DUNE-MASt3R); images are cropped to multiples of its patch size (16 or 14)\n"
    "  --min-conf   confidence threshold for scene.ply (default 3, as the official demo)\n";

struct Args {
  std::string model, out, device, image_a, image_b;
  int size = 0;  // 0: the model's own
  float min_conf = 3.0f;
  recon::gpu::Precision precision = recon::gpu::Precision::kF32;
};

int fail(const std::string& message, int code = 1) {
  std::fprintf(stderr, "recon-infer: %s\n", message.c_str());
  return code;
}

Status write_outputs(recon::gpu::Runtime& rt, const recon::gpu::Mast3rResult& r,
                     const std::array<recon::io::Image, 2>& images, const Args& args) {
  namespace fs = std::filesystem;
  const auto& t = r.tensors;
  const auto tensors = t.list();
  for (size_t i = 0; i < tensors.size(); ++i) {
    RECON_ASSIGN_OR_RETURN(auto bytes, tensors[i]->host(rt));
    std::span<const float> values(reinterpret_cast<const float*>(bytes.data()), bytes.size() / 4);
    // Drop the batch axis of 1 so the arrays read [H, W, ...] as documented.
    std::vector<int64_t> shape(tensors[i]->shape().begin() + 1, tensors[i]->shape().end());
    const std::string name = recon::gpu::Mast3rOutputs::kNames[i];
    RECON_RETURN_IF_ERROR(recon::io::write_npy((fs::path(args.out) / (name + ".npy")).string(), shape, values));
  }
  // The host copies are cached by the loop above; these reads do not download again.
  auto floats = [&](const recon::gpu::Tensor& tensor) -> Result<std::span<const float>> {
    RECON_ASSIGN_OR_RETURN(auto bytes, tensor.host(rt));
    return std::span<const float>(reinterpret_cast<const float*>(bytes.data()), bytes.size() / 4);
  };

  std::vector<recon::io::ColoredPoint> cloud;
  size_t total = 0;
  for (int v = 0; v < 2; ++v) {
    const recon::io::Image& img = images[v];
    RECON_ASSIGN_OR_RETURN(std::span<const float> pts, floats(t.pts3d[v]));
    RECON_ASSIGN_OR_RETURN(std::span<const float> conf, floats(t.conf[v]));
    total += conf.size();
    std::vector<float> depth(conf.size());
    for (size_t i = 0; i < conf.size(); ++i) {
      depth[i] = pts[i * 3 + 2];
      if (conf[i] < args.min_conf) continue;
      const uint8_t* c = &img.pixels[i * 3];
      cloud.push_back({pts[i * 3], pts[i * 3 + 1], pts[i * 3 + 2], c[0], c[1], c[2]});
    }
    const std::string sfx = std::to_string(v + 1);
    RECON_RETURN_IF_ERROR(recon::io::save_png((fs::path(args.out) / ("depth_" + sfx + ".png")).string(),
                                              recon::io::colorize(depth, img.width, img.height, true)));
    RECON_RETURN_IF_ERROR(recon::io::save_png((fs::path(args.out) / ("conf_" + sfx + ".png")).string(),
                                              recon::io::colorize(conf, img.width, img.height, false)));
    RECON_RETURN_IF_ERROR(recon::io::save_png((fs::path(args.out) / ("input_" + sfx + ".png")).string(), img));
  }
  RECON_RETURN_IF_ERROR(recon::io::write_ply((fs::path(args.out) / "scene.ply").string(), cloud));
  std::printf("scene.ply: %zu of %zu points with confidence >= %.2f (pts3d_2 is in view 1's frame)\n", cloud.size(),
              total, args.min_conf);
  return Status::ok();
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  std::vector<std::string> images;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "recon-infer: %s needs a value\n%s", a.c_str(), kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--model")
      args.model = next();
    else if (a == "--out")
      args.out = next();
    else if (a == "--device")
      args.device = next();
    else if (a == "--size")
      args.size = std::atoi(next().c_str());
    else if (a == "--min-conf")
      args.min_conf = std::strtof(next().c_str(), nullptr);
    else if (a == "--precision") {
      auto p = recon::gpu::parse_precision(next());
      if (!p.is_ok()) return fail(p.status().message(), 2);
      args.precision = p.value();
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "recon-infer: unknown option %s\n%s", a.c_str(), kUsage);
      return 2;
    } else {
      images.push_back(a);
    }
  }
  if (args.model.empty() || args.out.empty() || images.size() != 2 || (args.size != 0 && args.size < 16)) {
    std::fputs(kUsage, stderr);
    return 2;
  }

  recon::gpu::RuntimeOptions options;
  options.context.device = args.device;
  auto rt = recon::gpu::Runtime::create(options);
  if (!rt.is_ok()) return fail(rt.status().to_string());
  std::printf("device: %s\n", rt.value()->caps().device_name.c_str());
  auto engine = recon::gpu::Mast3rEngine::load(*rt.value(), args.model, args.precision);
  if (!engine.is_ok()) return fail(engine.status().to_string());

  // The official loader's preparation for this model (its size unless --size; its patch and squares).
  const recon::gpu::Mast3rConfig& config = engine.value()->config();
  const int size = args.size != 0 ? args.size : static_cast<int>(config.image_long_side());
  std::array<recon::io::Image, 2> prepared;
  for (int v = 0; v < 2; ++v) {
    auto img = recon::io::load_rgb(images[v]);
    if (!img.is_ok()) return fail(img.status().to_string());
    auto p = recon::io::prepare_official(img.value(), size, config.image_crop());
    if (!p.is_ok()) return fail(images[v] + ": " + p.status().to_string());
    std::printf("view %d: %s %dx%d -> %dx%d\n", v + 1, images[v].c_str(), p->original_width, p->original_height,
                p->image.width, p->image.height);
    prepared[v] = std::move(p->image);
  }

  recon::gpu::ImageU8View a{prepared[0].pixels.data(), prepared[0].height, prepared[0].width, 0};
  recon::gpu::ImageU8View b{prepared[1].pixels.data(), prepared[1].height, prepared[1].width, 0};
  // The first run builds pipelines and records the graph; the second is the steady-state time.
  auto first = engine.value()->infer(std::span(&a, 1), std::span(&b, 1));
  if (!first.is_ok()) return fail(first.status().to_string());
  auto result = engine.value()->infer(std::span(&a, 1), std::span(&b, 1));
  if (!result.is_ok()) return fail(result.status().to_string());
  (void)rt.value()->pipeline_cache().save();

  std::error_code ec;
  std::filesystem::create_directories(args.out, ec);
  Status written = write_outputs(*rt.value(), result.value(), prepared, args);
  if (!written.is_ok()) return fail(written.to_string());

  std::printf("timings (%s, %s): first call %.1f ms (builds pipelines), then %.2f ms wall, %.2f ms GPU\n",
              recon::gpu::precision_name(args.precision), result->shape.to_string().c_str(), first->wall_ms,
              result->wall_ms, result->gpu_ms);
  for (const auto& [stage, ms] : result->stage_ms) std::printf("  %-12s %8.3f ms\n", stage.c_str(), ms);
  std::printf("outputs in %s\n", args.out.c_str());
  return 0;
}
