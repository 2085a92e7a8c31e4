// A reconstructed multi-view scene (cameras with intrinsics and poses, coloured points with their
// tracks) and the writers reconctl uses to save what a reconstruct job returns: a cameras JSON,
// COLMAP's text model and a binary PLY. Plain data and files only: no GPU, no daemon types.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/status.h"

namespace recon::io {

// Pixel coordinates follow COLMAP: the centre of the top-left pixel is (0.5, 0.5).
struct SceneCamera {
  std::string image_name;  // the file name the user gave, e.g. "img_003.jpg"
  int width = 0;           // pixels of the image the intrinsics refer to
  int height = 0;
  double fx = 0, fy = 0, cx = 0, cy = 0;
  // Row-major 4x4 rigid transform; the camera frame is OpenCV's (x right, y down, z forward).
  std::array<double, 16> cam_to_world{};
  int component = 0;  // connected component of the pair graph (0 = the largest)
};

// A pixel of one camera (an index into Scene::cameras) that sees a point.
struct SceneObservation {
  int camera = 0;
  float x = 0, y = 0;
};

struct ScenePoint {
  float x = 0, y = 0, z = 0;
  uint8_t r = 0, g = 0, b = 0;
  float confidence = 0;
  std::vector<SceneObservation> track;
};

struct Scene {
  std::vector<SceneCamera> cameras;
  std::vector<ScenePoint> points;
};

// The first problem that makes `scene` unwritable (non-finite or non-rigid pose, bad intrinsics, an
// observation of a camera that does not exist), or OK. Each writer below checks the parts it writes
// before it creates a file.
Status validate_scene(const Scene& scene);

// {"cameras":[{"image":..., "width":..., "height":..., "fx":..., "fy":..., "cx":..., "cy":...,
//   "cam_to_world":[[4 numbers] x 4], "component":...}, ...]}, numbers in shortest round-trip form.
Status write_cameras_json(const std::string& path, const Scene& scene);

// COLMAP's text model in the existing directory `dir`: cameras.txt (one PINHOLE camera per image),
// images.txt (world-to-camera poses and each image's observations) and points3D.txt (ERROR is the
// mean reprojection error of the track, in pixels). IDs are 1 + the index in `scene`. COLMAP reads
// an image name up to the first space, so names with whitespace are refused.
Status write_colmap_text(const std::string& dir, const Scene& scene);

// The points as binary little-endian PLY: x y z (float), red green blue (uchar).
Status write_scene_ply(const std::string& path, const Scene& scene);

// The unit quaternion (w, x, y, z), Hamilton convention with w >= 0, of the rotation matrix
// `r` (row-major 3x3). Robust for every rotation angle (Shepperd's largest-diagonal branch).
std::array<double, 4> rotation_to_quaternion(const std::array<double, 9>& r);

}  // namespace recon::io
