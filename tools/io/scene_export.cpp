#include "tools/io/scene_export.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string_view>

#include "tools/io/result_writers.h"

namespace recon::io {
namespace {

// Shortest text that reads back as the same value (std::to_chars); never locale-dependent.
template <typename T>
void append_number(std::string& out, T value) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, res.ptr);
}

Status file_error(const std::string& what, const std::string& path, int err) {
  std::string message = what + " " + path + ": " + std::strerror(err);
  if (err == ENOENT || err == ENOTDIR) return not_found(std::move(message));
  if (err == EACCES || err == EPERM || err == EROFS) return permission_denied(std::move(message));
  return unavailable(std::move(message));
}

// A file written through a string buffer that is flushed in large chunks, so that a model of
// millions of points is never held in memory as one string.
class TextFile {
 public:
  static Result<TextFile> create(const std::string& path) {
    TextFile file(path);
    file.file_.reset(std::fopen(path.c_str(), "wb"));
    if (!file.file_) return file_error("cannot write", path, errno);
    return file;
  }

  std::string& text() { return buffer_; }

  Status flush_if_large() { return buffer_.size() >= kFlushBytes ? flush() : Status::ok(); }

  Status finish() {
    RECON_RETURN_IF_ERROR(flush());
    const int rc = std::fclose(file_.release());
    if (rc != 0) return file_error("cannot finish writing", path_, errno);
    return Status::ok();
  }

 private:
  static constexpr size_t kFlushBytes = size_t{1} << 20;
  struct Closer {
    void operator()(FILE* f) const { std::fclose(f); }
  };

  explicit TextFile(std::string path) : path_(std::move(path)) {}

  Status flush() {
    if (!buffer_.empty() && std::fwrite(buffer_.data(), 1, buffer_.size(), file_.get()) != buffer_.size())
      return file_error("short write to", path_, errno);
    buffer_.clear();
    return Status::ok();
  }

  std::string path_;
  std::unique_ptr<FILE, Closer> file_;
  std::string buffer_;
};

std::string describe_camera(const Scene& scene, size_t i) {
  return "camera " + std::to_string(i) + " (" + scene.cameras[i].image_name + ")";
}

Status validate_cameras(const Scene& scene) {
  for (size_t i = 0; i < scene.cameras.size(); ++i) {
    const SceneCamera& c = scene.cameras[i];
    if (c.width <= 0 || c.height <= 0) {
      return invalid_argument(describe_camera(scene, i) + ": image size " + std::to_string(c.width) + "x" +
                              std::to_string(c.height) + " is not positive");
    }
    if (!(std::isfinite(c.fx) && std::isfinite(c.fy) && c.fx > 0 && c.fy > 0 && std::isfinite(c.cx) &&
          std::isfinite(c.cy)))
      return invalid_argument(describe_camera(scene, i) + ": focal lengths must be finite and positive");
    const auto& m = c.cam_to_world;
    bool rigid = std::all_of(m.begin(), m.end(), [](double v) { return std::isfinite(v); }) &&
                 std::abs(m[12]) + std::abs(m[13]) + std::abs(m[14]) + std::abs(m[15] - 1) < 1e-6;
    // R^T R = I and det R = +1, with room for poses that went through float32.
    for (int a = 0; a < 3 && rigid; ++a) {
      for (int b = 0; b < 3; ++b) {
        const double dot = m[a] * m[b] + m[4 + a] * m[4 + b] + m[8 + a] * m[8 + b];
        if (std::abs(dot - (a == b ? 1.0 : 0.0)) > 1e-4) rigid = false;
      }
    }
    const double det =
        m[0] * (m[5] * m[10] - m[6] * m[9]) - m[1] * (m[4] * m[10] - m[6] * m[8]) + m[2] * (m[4] * m[9] - m[5] * m[8]);
    if (!rigid || det < 0)
      return invalid_argument(describe_camera(scene, i) + ": cam_to_world is not a rigid transform");
  }
  return Status::ok();
}

Status validate_points(const Scene& scene) {
  const int num_cameras = static_cast<int>(scene.cameras.size());
  for (size_t i = 0; i < scene.points.size(); ++i) {
    const ScenePoint& p = scene.points[i];
    if (!(std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z)))
      return invalid_argument("point " + std::to_string(i) + " has a non-finite coordinate");
    for (const SceneObservation& o : p.track) {
      if (o.camera < 0 || o.camera >= num_cameras) {
        return invalid_argument("point " + std::to_string(i) + " is observed by camera " + std::to_string(o.camera) +
                                ", but the scene has " + std::to_string(num_cameras) + " cameras");
      }
      if (!(std::isfinite(o.x) && std::isfinite(o.y)))
        return invalid_argument("point " + std::to_string(i) + " has a non-finite observation");
    }
  }
  return Status::ok();
}

// JSON string contents: quotes, backslashes and control characters escaped; bytes that are not
// UTF-8 become U+FFFD so that the file stays valid JSON whatever the file name's bytes are.
void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out.append(buf);
      ++i;
    } else if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
    } else {
      // Length of a well-formed sequence starting here (RFC 3629: no overlongs, no surrogates), or 0.
      size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
      if (n > s.size() - i) n = 0;
      for (size_t k = 1; k < n; ++k) {
        const auto cont = static_cast<unsigned char>(s[i + k]);
        unsigned lo = 0x80, hi = 0xbf;
        if (k == 1 && c == 0xe0) lo = 0xa0;
        if (k == 1 && c == 0xed) hi = 0x9f;
        if (k == 1 && c == 0xf0) lo = 0x90;
        if (k == 1 && c == 0xf4) hi = 0x8f;
        if (cont < lo || cont > hi) n = 0;
      }
      if (n == 0) {
        out.append("\\ufffd");
        ++i;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
    }
  }
  out.push_back('"');
}

// World-to-camera rotation (row-major) and translation of a camera.
struct WorldToCamera {
  std::array<double, 9> r;
  std::array<double, 3> t;
};

WorldToCamera world_to_camera(const SceneCamera& c) {
  const auto& m = c.cam_to_world;
  WorldToCamera w{};
  for (size_t row = 0; row < 3; ++row)
    for (size_t col = 0; col < 3; ++col) w.r[row * 3 + col] = m[col * 4 + row];
  for (size_t row = 0; row < 3; ++row)
    w.t[row] = -(w.r[row * 3] * m[3] + w.r[row * 3 + 1] * m[7] + w.r[row * 3 + 2] * m[11]);
  return w;
}

// Mean distance in pixels between the projection of `p` and its observations (those in front).
double mean_reprojection_error(const ScenePoint& p, const Scene& scene, const std::vector<WorldToCamera>& poses) {
  double sum = 0;
  int n = 0;
  for (const SceneObservation& o : p.track) {
    const WorldToCamera& w = poses[o.camera];
    double pc[3];
    for (size_t row = 0; row < 3; ++row)
      pc[row] = w.r[row * 3] * p.x + w.r[row * 3 + 1] * p.y + w.r[row * 3 + 2] * p.z + w.t[row];
    if (!(pc[2] > 0)) continue;
    const SceneCamera& c = scene.cameras[o.camera];
    sum += std::hypot(c.fx * pc[0] / pc[2] + c.cx - o.x, c.fy * pc[1] / pc[2] + c.cy - o.y);
    ++n;
  }
  return n > 0 ? sum / n : 0.0;
}

std::string join_path(const std::string& dir, const char* name) {
  return (std::filesystem::path(dir) / name).string();
}

Status write_colmap_cameras(const std::string& path, const Scene& scene) {
  RECON_ASSIGN_OR_RETURN(TextFile file, TextFile::create(path));
  std::string& out = file.text();
  out += "# Camera list with one line of data per camera:\n";
  out += "#   CAMERA_ID, MODEL, WIDTH, HEIGHT, PARAMS[]\n";
  out += "# Number of cameras: " + std::to_string(scene.cameras.size()) + "\n";
  for (size_t i = 0; i < scene.cameras.size(); ++i) {
    const SceneCamera& c = scene.cameras[i];
    out += std::to_string(i + 1) + " PINHOLE " + std::to_string(c.width) + " " + std::to_string(c.height);
    for (double v : {c.fx, c.fy, c.cx, c.cy}) {
      out.push_back(' ');
      append_number(out, v);
    }
    out.push_back('\n');
  }
  return file.finish();
}

// Where each track element sits in its image's POINTS2D line, which is COLMAP's POINT2D_IDX.
struct ObservationIndex {
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> by_image;  // (point, track element), in point order
  std::vector<size_t> track_offset;  // point p's elements start at point2d_idx[track_offset[p]]
  std::vector<uint32_t> point2d_idx;

  double mean_per(size_t n) const { return n == 0 ? 0.0 : static_cast<double>(point2d_idx.size()) / n; }
};

ObservationIndex index_observations(const Scene& scene) {
  ObservationIndex index;
  index.by_image.resize(scene.cameras.size());
  index.track_offset.reserve(scene.points.size());
  for (size_t p = 0; p < scene.points.size(); ++p) {
    index.track_offset.push_back(index.point2d_idx.size());
    const auto& track = scene.points[p].track;
    for (size_t k = 0; k < track.size(); ++k) {
      auto& line = index.by_image[track[k].camera];
      index.point2d_idx.push_back(static_cast<uint32_t>(line.size()));
      line.emplace_back(static_cast<uint32_t>(p), static_cast<uint32_t>(k));
    }
  }
  return index;
}

Status write_colmap_images(const std::string& path, const Scene& scene, const std::vector<WorldToCamera>& poses,
                           const ObservationIndex& index) {
  RECON_ASSIGN_OR_RETURN(TextFile file, TextFile::create(path));
  std::string& out = file.text();
  out += "# Image list with two lines of data per image:\n";
  out += "#   IMAGE_ID, QW, QX, QY, QZ, TX, TY, TZ, CAMERA_ID, NAME\n";
  out += "#   POINTS2D[] as (X, Y, POINT3D_ID)\n";
  out += "# Number of images: " + std::to_string(scene.cameras.size()) + ", mean observations per image: ";
  append_number(out, index.mean_per(scene.cameras.size()));
  out.push_back('\n');
  for (size_t i = 0; i < scene.cameras.size(); ++i) {
    const std::array<double, 4> q = rotation_to_quaternion(poses[i].r);
    out += std::to_string(i + 1);
    for (double v : {q[0], q[1], q[2], q[3], poses[i].t[0], poses[i].t[1], poses[i].t[2]}) {
      out.push_back(' ');
      append_number(out, v);
    }
    out += " " + std::to_string(i + 1) + " " + scene.cameras[i].image_name + "\n";
    const auto& line = index.by_image[i];
    for (size_t j = 0; j < line.size(); ++j) {
      const auto [p, k] = line[j];
      const SceneObservation& o = scene.points[p].track[k];
      if (j > 0) out.push_back(' ');
      append_number(out, o.x);
      out.push_back(' ');
      append_number(out, o.y);
      out += " " + std::to_string(p + 1);
    }
    out.push_back('\n');
    RECON_RETURN_IF_ERROR(file.flush_if_large());
  }
  return file.finish();
}

Status write_colmap_points(const std::string& path, const Scene& scene, const std::vector<WorldToCamera>& poses,
                           const ObservationIndex& index) {
  RECON_ASSIGN_OR_RETURN(TextFile file, TextFile::create(path));
  std::string& out = file.text();
  out += "# 3D point list with one line of data per point:\n";
  out += "#   POINT3D_ID, X, Y, Z, R, G, B, ERROR, TRACK[] as (IMAGE_ID, POINT2D_IDX)\n";
  out += "# Number of points: " + std::to_string(scene.points.size()) + ", mean track length: ";
  append_number(out, index.mean_per(scene.points.size()));
  out.push_back('\n');
  for (size_t p = 0; p < scene.points.size(); ++p) {
    const ScenePoint& pt = scene.points[p];
    out += std::to_string(p + 1);
    for (float v : {pt.x, pt.y, pt.z}) {
      out.push_back(' ');
      append_number(out, v);
    }
    out += " " + std::to_string(pt.r) + " " + std::to_string(pt.g) + " " + std::to_string(pt.b) + " ";
    append_number(out, mean_reprojection_error(pt, scene, poses));
    for (size_t k = 0; k < pt.track.size(); ++k) {
      const uint32_t idx = index.point2d_idx[index.track_offset[p] + k];
      out += " " + std::to_string(pt.track[k].camera + 1) + " " + std::to_string(idx);
    }
    out.push_back('\n');
    RECON_RETURN_IF_ERROR(file.flush_if_large());
  }
  return file.finish();
}

}  // namespace

std::array<double, 4> rotation_to_quaternion(const std::array<double, 9>& r) {
  const double trace = r[0] + r[4] + r[8];
  double w, x, y, z;
  // Divide by the largest of the four |components| so that no branch loses precision (Shepperd).
  if (trace >= r[0] && trace >= r[4] && trace >= r[8]) {
    const double s = 2.0 * std::sqrt(std::max(0.0, 1.0 + trace));  // 4w
    w = 0.25 * s;
    x = (r[7] - r[5]) / s;
    y = (r[2] - r[6]) / s;
    z = (r[3] - r[1]) / s;
  } else if (r[0] >= r[4] && r[0] >= r[8]) {
    const double s = 2.0 * std::sqrt(std::max(0.0, 1.0 + r[0] - r[4] - r[8]));  // 4x
    w = (r[7] - r[5]) / s;
    x = 0.25 * s;
    y = (r[1] + r[3]) / s;
    z = (r[2] + r[6]) / s;
  } else if (r[4] >= r[8]) {
    const double s = 2.0 * std::sqrt(std::max(0.0, 1.0 - r[0] + r[4] - r[8]));  // 4y
    w = (r[2] - r[6]) / s;
    x = (r[1] + r[3]) / s;
    y = 0.25 * s;
    z = (r[5] + r[7]) / s;
  } else {
    const double s = 2.0 * std::sqrt(std::max(0.0, 1.0 - r[0] - r[4] + r[8]));  // 4z
    w = (r[3] - r[1]) / s;
    x = (r[2] + r[6]) / s;
    y = (r[5] + r[7]) / s;
    z = 0.25 * s;
  }
  const double norm = std::sqrt(w * w + x * x + y * y + z * z);
  const double sign = w < 0 ? -1.0 : 1.0;
  return {sign * w / norm, sign * x / norm, sign * y / norm, sign * z / norm};
}

Status validate_scene(const Scene& scene) {
  RECON_RETURN_IF_ERROR(validate_cameras(scene));
  return validate_points(scene);
}

Status write_cameras_json(const std::string& path, const Scene& scene) {
  RECON_RETURN_IF_ERROR(validate_cameras(scene).with_context(path));
  RECON_ASSIGN_OR_RETURN(TextFile file, TextFile::create(path));
  std::string& out = file.text();
  out += "{\"cameras\": [";
  for (size_t i = 0; i < scene.cameras.size(); ++i) {
    const SceneCamera& c = scene.cameras[i];
    out += i == 0 ? "\n  {\"image\": " : ",\n  {\"image\": ";
    append_json_string(out, c.image_name);
    out += ", \"width\": " + std::to_string(c.width) + ", \"height\": " + std::to_string(c.height);
    const std::pair<const char*, double> intrinsics[] = {{"fx", c.fx}, {"fy", c.fy}, {"cx", c.cx}, {"cy", c.cy}};
    for (const auto& [key, value] : intrinsics) {
      out += std::string(", \"") + key + "\": ";
      append_number(out, value);
    }
    out += ", \"cam_to_world\": [";
    for (int row = 0; row < 4; ++row) {
      out += row == 0 ? "[" : ", [";
      for (int col = 0; col < 4; ++col) {
        if (col > 0) out += ", ";
        append_number(out, c.cam_to_world[row * 4 + col]);
      }
      out += "]";
    }
    out += "], \"component\": " + std::to_string(c.component) + "}";
  }
  out += scene.cameras.empty() ? "]}\n" : "\n]}\n";
  return file.finish();
}

Status write_colmap_text(const std::string& dir, const Scene& scene) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return not_found("COLMAP model directory " + dir + " does not exist");
  RECON_RETURN_IF_ERROR(validate_scene(scene).with_context(dir));
  for (size_t i = 0; i < scene.cameras.size(); ++i) {
    const std::string& name = scene.cameras[i].image_name;
    if (name.empty() || std::any_of(name.begin(), name.end(), [](char ch) { return std::isspace(ch & 0xff); })) {
      return invalid_argument(dir + ": " + describe_camera(scene, i) +
                              ": COLMAP's text format cannot hold an image name that is empty or has whitespace");
    }
  }
  std::vector<WorldToCamera> poses;
  poses.reserve(scene.cameras.size());
  for (const SceneCamera& c : scene.cameras) poses.push_back(world_to_camera(c));
  const ObservationIndex index = index_observations(scene);
  RECON_RETURN_IF_ERROR(write_colmap_cameras(join_path(dir, "cameras.txt"), scene));
  RECON_RETURN_IF_ERROR(write_colmap_images(join_path(dir, "images.txt"), scene, poses, index));
  return write_colmap_points(join_path(dir, "points3D.txt"), scene, poses, index);
}

Status write_scene_ply(const std::string& path, const Scene& scene) {
  RECON_RETURN_IF_ERROR(validate_points(scene).with_context(path));
  std::vector<ColoredPoint> points;
  points.reserve(scene.points.size());
  for (const ScenePoint& p : scene.points) points.push_back({p.x, p.y, p.z, p.r, p.g, p.b});
  return write_ply(path, points);
}

}  // namespace recon::io
