// What a reconstruction answers: see reconstruct_outputs.h.
#include "daemon/serving/jobs/reconstruct/reconstruct_outputs.h"

#include "daemon/serving/stored_from_host.h"

namespace recon::daemon {

ReconstructArrays reconstruct_arrays(const gpu::SceneAlignment& scene, std::span<const gpu::DenseImage> dense,
                                     std::span<const gpu::PairMatches> pairs, float min_conf) {
  ReconstructArrays out;
  for (size_t i = 0; i < scene.cameras.size(); ++i) {
    const gpu::AlignedCamera& camera = scene.cameras[i];
    for (double v : camera.cam_to_world) out.cam_to_world.push_back(static_cast<float>(v));
    const float k[9] = {static_cast<float>(camera.focal),
                        0,
                        static_cast<float>(camera.cx),
                        0,
                        static_cast<float>(camera.focal),
                        static_cast<float>(camera.cy),
                        0,
                        0,
                        1};
    out.intrinsics.insert(out.intrinsics.end(), k, k + 9);
    out.image_hw.push_back(camera.height);
    out.image_hw.push_back(camera.width);
    out.component.push_back(scene.component[i]);
    const gpu::DenseImage& image = dense[i];
    out.depth.insert(out.depth.end(), image.depth.begin(), image.depth.end());
    out.depth_conf.insert(out.depth_conf.end(), image.conf.begin(), image.conf.end());
    for (int y = 0; y < camera.height; ++y) {
      for (int x = 0; x < camera.width; ++x) {
        const size_t p = static_cast<size_t>(y) * camera.width + x;
        if (!(image.conf[p] > min_conf)) continue;
        out.points.insert(out.points.end(), &image.points[3 * p], &image.points[3 * p] + 3);
        out.point_conf.push_back(image.conf[p]);
        out.point_pixels.push_back(static_cast<int32_t>(i));
        out.point_pixels.push_back(x);
        out.point_pixels.push_back(y);
      }
    }
  }
  for (const gpu::PairMatches& pair : pairs) {
    out.pair_matches.push_back(pair.image_a);
    out.pair_matches.push_back(pair.image_b);
    out.pair_matches.push_back(static_cast<int32_t>(pair.conf.size()));
  }
  for (double v : scene.coarse_loss) out.loss.push_back(static_cast<float>(v));
  for (double v : scene.fine_loss) out.loss.push_back(static_cast<float>(v));
  return out;
}

Result<std::vector<StoredTensor>> store_reconstruct_arrays(gpu::Runtime& rt, const ReconstructArrays& a) {
  const uint64_t n = a.component.size();
  const uint64_t m = a.point_conf.size();
  std::vector<StoredTensor> out;
  const auto add = [&](Result<StoredTensor> t) -> Status {
    RECON_RETURN_IF_ERROR(t.status());
    out.push_back(std::move(t).value());
    return Status::ok();
  };
  using gpu::DType;
  RECON_RETURN_IF_ERROR(add(stored_from_host(rt, "cam_to_world", DType::kF32, {n, 4, 4}, a.cam_to_world)));
  RECON_RETURN_IF_ERROR(add(stored_from_host(rt, "intrinsics", DType::kF32, {n, 3, 3}, a.intrinsics)));
  RECON_RETURN_IF_ERROR(add(stored_from_host(rt, "image_hw", DType::kI32, {n, 2}, a.image_hw)));
  RECON_RETURN_IF_ERROR(add(stored_from_host(rt, "component", DType::kI32, {n}, a.component)));
  RECON_RETURN_IF_ERROR(add(stored_from_host(rt, "depth", DType::kF32, {a.depth.size()}, a.depth)));
  RECON_RETURN_IF_ERROR(add(stored_from_host(rt, "depth_conf", DType::kF32, {a.depth_conf.size()}, a.depth_conf)));
  RECON_RETURN_IF_ERROR(add(stored_from_host(rt, "points", DType::kF32, {m, 3}, a.points)));
  RECON_RETURN_IF_ERROR(add(stored_from_host(rt, "point_pixels", DType::kI32, {m, 3}, a.point_pixels)));
  RECON_RETURN_IF_ERROR(add(stored_from_host(rt, "point_conf", DType::kF32, {m}, a.point_conf)));
  RECON_RETURN_IF_ERROR(
      add(stored_from_host(rt, "pair_matches", DType::kI32, {a.pair_matches.size() / 3, 3}, a.pair_matches)));
  RECON_RETURN_IF_ERROR(add(stored_from_host(rt, "loss", DType::kF32, {a.loss.size()}, a.loss)));
  return out;
}

}  // namespace recon::daemon
