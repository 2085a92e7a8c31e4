#include "tools/io/scene_export.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <optional>
#include <sstream>
#include <string_view>

#include "tools/io/scene_picture.h"

namespace recon::io {
namespace {

namespace fs = std::filesystem;

using Mat3 = std::array<double, 9>;  // row-major
using Vec3 = std::array<double, 3>;

Vec3 sub(const Vec3& a, const Vec3& b) {
  return {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
}
double dot(const Vec3& a, const Vec3& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
Vec3 cross(const Vec3& a, const Vec3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
Vec3 normalized(const Vec3& a) {
  const double n = std::sqrt(dot(a, a));
  return {a[0] / n, a[1] / n, a[2] / n};
}

// The rotation of a Hamilton quaternion (w, x, y, z), as COLMAP and Eigen define it.
Mat3 quaternion_to_rotation(double w, double x, double y, double z) {
  return {1 - 2 * (y * y + z * z), 2 * (x * y - w * z),     2 * (x * z + w * y),
          2 * (x * y + w * z),     1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
          2 * (x * z - w * y),     2 * (y * z + w * x),     1 - 2 * (x * x + y * y)};
}

Mat3 world_to_camera_rotation(const SceneCamera& c) {
  const auto& m = c.cam_to_world;
  return {m[0], m[4], m[8], m[1], m[5], m[9], m[2], m[6], m[10]};
}

Vec3 world_to_camera_translation(const SceneCamera& c) {
  const Mat3 r = world_to_camera_rotation(c);
  const Vec3 centre = {c.cam_to_world[3], c.cam_to_world[7], c.cam_to_world[11]};
  return {-dot({r[0], r[1], r[2]}, centre), -dot({r[3], r[4], r[5]}, centre), -dot({r[6], r[7], r[8]}, centre)};
}

// A camera at `centre` looking at the origin, image-down along world +y as far as it can.
SceneCamera camera_looking_at_origin(const Vec3& centre, int index) {
  SceneCamera c;
  c.image_name = "img_00" + std::to_string(index) + ".jpg";
  c.width = index == 4 ? 480 : 640;
  c.height = index == 4 ? 640 : 480;
  c.fx = 500 + 10 * index;
  c.fy = 505 + 10 * index;
  c.cx = c.width / 2.0 + 0.25 * index;
  c.cy = c.height / 2.0 - 0.5 * index;
  c.component = index == 5 ? 1 : 0;
  const Vec3 z = normalized(sub({0, 0, 0}, centre));
  const Vec3 y = normalized(sub({0, 1, 0}, {z[0] * z[1], z[1] * z[1], z[2] * z[1]}));
  const Vec3 x = cross(y, z);
  c.cam_to_world = {x[0], y[0], z[0], centre[0], x[1], y[1], z[1], centre[1], x[2], y[2], z[2], centre[2], 0, 0, 0, 1};
  return c;
}

// The pixel (COLMAP convention) where camera `c` sees `p`, if in front of it and inside its image.
bool project(const SceneCamera& c, const Vec3& p, double* u, double* v) {
  const Mat3 r = world_to_camera_rotation(c);
  const Vec3 t = world_to_camera_translation(c);
  const Vec3 pc = {dot({r[0], r[1], r[2]}, p) + t[0], dot({r[3], r[4], r[5]}, p) + t[1],
                   dot({r[6], r[7], r[8]}, p) + t[2]};
  if (pc[2] <= 0) return false;
  *u = c.fx * pc[0] / pc[2] + c.cx;
  *v = c.fy * pc[1] / pc[2] + c.cy;
  return *u >= 0 && *v >= 0 && *u < c.width && *v < c.height;
}

// Six cameras on a circle above a ball of 1,500 points resting on a 500-point floor; every point
// is observed by the cameras that see its outward side.
Scene synthetic_scene() {
  Scene scene;
  for (int i = 0; i < 6; ++i) {
    const double a = 2 * std::numbers::pi * i / 6 + 0.3;
    scene.cameras.push_back(camera_looking_at_origin({4 * std::cos(a), -1.5, 4 * std::sin(a)}, i));
  }
  auto add_point = [&](const Vec3& p, const Vec3& outward, uint8_t r, uint8_t g, uint8_t b) {
    ScenePoint point;
    point.x = static_cast<float>(p[0]);
    point.y = static_cast<float>(p[1]);
    point.z = static_cast<float>(p[2]);
    point.r = r;
    point.g = g;
    point.b = b;
    point.confidence = 1.5f;
    const Vec3 stored = {point.x, point.y, point.z};
    for (int i = 0; i < static_cast<int>(scene.cameras.size()); ++i) {
      const SceneCamera& c = scene.cameras[i];
      double u, v;
      if (dot(outward, sub({c.cam_to_world[3], c.cam_to_world[7], c.cam_to_world[11]}, p)) > 0 &&
          project(c, stored, &u, &v))
        point.track.push_back({i, static_cast<float>(u), static_cast<float>(v)});
    }
    scene.points.push_back(point);
  };
  const int sphere = 1500;
  for (int k = 0; k < sphere; ++k) {  // a Fibonacci sphere of radius 1
    const double y = 1 - 2 * (k + 0.5) / sphere, r = std::sqrt(1 - y * y);
    const double phi = k * std::numbers::pi * (3 - std::sqrt(5.0));
    const Vec3 n = {r * std::cos(phi), y, r * std::sin(phi)};
    add_point(n, n, static_cast<uint8_t>(128 + 90 * n[0]), static_cast<uint8_t>(128 + 90 * n[1]),
              static_cast<uint8_t>(128 + 90 * n[2]));
  }
  for (int k = 0; k < 500; ++k) {  // a 2.8 x 2.8 floor under it
    const int col = k % 25, row = k / 25;
    const Vec3 p = {-1.4 + 2.8 * col / 24.0, 1.0, -1.4 + 2.8 * row / 19.0};
    const bool dark = (col / 3 + row / 3) % 2 == 0;
    add_point(p, {0, -1, 0}, dark ? 70 : 120, dark ? 90 : 150, dark ? 70 : 110);
  }
  return scene;
}

fs::path temp_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("recon-scene-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> lines_of(const fs::path& path) {
  std::istringstream in(read_file(path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// ---- A reader for COLMAP's text model, written from its format documentation. ----

struct ColmapCamera {
  std::string model;
  int width = 0, height = 0;
  std::vector<double> params;
};
struct ColmapPoint2D {
  float x = 0, y = 0;
  long point3d_id = -1;
};
struct ColmapImage {
  double q[4] = {}, t[3] = {};
  int camera_id = 0;
  std::string name;
  std::vector<ColmapPoint2D> points2d;
};
struct ColmapPoint3D {
  float xyz[3] = {};
  int rgb[3] = {};
  double error = 0;
  std::vector<std::pair<int, int>> track;  // (IMAGE_ID, POINT2D_IDX)
};
struct ColmapModel {
  std::map<int, ColmapCamera> cameras;
  std::map<int, ColmapImage> images;
  std::map<long, ColmapPoint3D> points;
};

bool is_data(const std::string& line) {
  return !line.empty() && line[0] != '#';
}

ColmapModel read_colmap_text(const fs::path& dir) {
  ColmapModel model;
  for (const std::string& line : lines_of(dir / "cameras.txt")) {
    if (!is_data(line)) continue;
    std::istringstream in(line);
    int id;
    ColmapCamera c;
    in >> id >> c.model >> c.width >> c.height;
    for (double v; in >> v;) c.params.push_back(v);
    model.cameras[id] = c;
  }
  const std::vector<std::string> image_lines = lines_of(dir / "images.txt");
  for (size_t i = 0; i < image_lines.size(); ++i) {
    if (!is_data(image_lines[i])) continue;
    std::istringstream in(image_lines[i]);
    int id;
    ColmapImage image;
    in >> id >> image.q[0] >> image.q[1] >> image.q[2] >> image.q[3] >> image.t[0] >> image.t[1] >> image.t[2] >>
        image.camera_id >> image.name;
    std::istringstream points(i + 1 < image_lines.size() ? image_lines[++i] : "");
    for (std::string x, y, id3; points >> x >> y >> id3;)
      image.points2d.push_back({std::stof(x), std::stof(y), std::stol(id3)});
    model.images[id] = image;
  }
  for (const std::string& line : lines_of(dir / "points3D.txt")) {
    if (!is_data(line)) continue;
    std::istringstream in(line);
    long id;
    std::string x, y, z;
    ColmapPoint3D p;
    in >> id >> x >> y >> z >> p.rgb[0] >> p.rgb[1] >> p.rgb[2] >> p.error;
    p.xyz[0] = std::stof(x);
    p.xyz[1] = std::stof(y);
    p.xyz[2] = std::stof(z);
    for (int image_id, idx; in >> image_id >> idx;) p.track.emplace_back(image_id, idx);
    model.points[id] = p;
  }
  return model;
}

// Where the parsed model puts `xyz` in image `image_id`, in pixels.
std::pair<double, double> reproject(const ColmapModel& model, int image_id, const float* xyz) {
  const ColmapImage& image = model.images.at(image_id);
  const ColmapCamera& camera = model.cameras.at(image.camera_id);
  const Mat3 r = quaternion_to_rotation(image.q[0], image.q[1], image.q[2], image.q[3]);
  const Vec3 p = {xyz[0], xyz[1], xyz[2]};
  const Vec3 pc = {dot({r[0], r[1], r[2]}, p) + image.t[0], dot({r[3], r[4], r[5]}, p) + image.t[1],
                   dot({r[6], r[7], r[8]}, p) + image.t[2]};
  return {camera.params[0] * pc[0] / pc[2] + camera.params[2], camera.params[1] * pc[1] / pc[2] + camera.params[3]};
}

// ---- A strict JSON reader (RFC 8259), enough to prove the file is JSON and read it back. ----

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> fields;

  const Json& operator[](const std::string& key) const {
    for (const auto& [k, v] : fields)
      if (k == key) return v;
    static const Json missing;
    return missing;
  }
};

class JsonReader {
 public:
  explicit JsonReader(std::string_view s) : s_(s) {}

  // The document, or nullopt where it is not exactly one JSON value.
  std::optional<Json> parse() {
    Json v = value();
    space();
    if (!ok_ || i_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  bool eat(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  Json fail() {
    ok_ = false;
    return {};
  }
  Json value() {
    space();
    if (i_ >= s_.size()) return fail();
    Json v;
    const char c = s_[i_];
    if (c == '{') {
      v.kind = Json::kObject;
      ++i_;
      if (eat('}')) return v;
      do {
        space();
        Json key = string();
        if (!ok_ || !eat(':')) return fail();
        v.fields.emplace_back(key.text, value());
      } while (ok_ && eat(','));
      if (!eat('}')) return fail();
    } else if (c == '[') {
      v.kind = Json::kArray;
      ++i_;
      if (eat(']')) return v;
      do v.items.push_back(value());
      while (ok_ && eat(','));
      if (!eat(']')) return fail();
    } else if (c == '"') {
      return string();
    } else if (s_.substr(i_, 4) == "null") {
      i_ += 4;
    } else if (s_.substr(i_, 4) == "true" || s_.substr(i_, 5) == "false") {
      v.kind = Json::kBool;
      i_ += s_[i_] == 't' ? 4 : 5;
    } else {
      // JSON's number grammar is stricter than from_chars: no leading '+', zeros or bare '.'.
      const size_t start = i_;
      if (s_[i_] == '-') ++i_;
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) return fail();
      if (s_[i_] == '0' && i_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_ + 1]))) return fail();
      v.kind = Json::kNumber;
      const auto res = std::from_chars(s_.data() + start, s_.data() + s_.size(), v.number);
      if (res.ec != std::errc()) return fail();
      i_ = static_cast<size_t>(res.ptr - s_.data());
      if (s_[i_ - 1] == '.') return fail();
    }
    return v;
  }
  Json string() {
    if (i_ >= s_.size() || s_[i_] != '"') return fail();
    Json v;
    v.kind = Json::kString;
    for (++i_; i_ < s_.size() && s_[i_] != '"'; ++i_) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c < 0x20) return fail();
      if (c != '\\') {
        v.text.push_back(static_cast<char>(c));
        continue;
      }
      if (++i_ >= s_.size()) return fail();
      const char e = s_[i_];
      const std::string_view simple = "\"\\/bfnrt", meaning = "\"\\/\b\f\n\r\t";
      if (simple.find(e) != std::string_view::npos) {
        v.text.push_back(meaning[simple.find(e)]);
      } else if (e == 'u' && i_ + 4 < s_.size()) {
        unsigned cp = 0;
        const auto res = std::from_chars(s_.data() + i_ + 1, s_.data() + i_ + 5, cp, 16);
        if (res.ptr != s_.data() + i_ + 5 || (cp >= 0xd800 && cp <= 0xdfff)) return fail();
        i_ += 4;
        if (cp < 0x80) {
          v.text.push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
          v.text.push_back(static_cast<char>(0xc0 | (cp >> 6)));
          v.text.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
        } else {
          v.text.push_back(static_cast<char>(0xe0 | (cp >> 12)));
          v.text.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
          v.text.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
        }
      } else {
        return fail();
      }
    }
    if (i_ >= s_.size()) return fail();
    ++i_;
    return v;
  }

  std::string_view s_;
  size_t i_ = 0;
  bool ok_ = true;
};

// ---- COLMAP text model ----

class SceneExportColmap : public ::testing::Test {
 protected:
  void SetUp() override {
    scene_ = synthetic_scene();
    dir_ = temp_dir("colmap");
    const Status status = write_colmap_text(dir_.string(), scene_);
    ASSERT_TRUE(status.is_ok()) << status.to_string();
    model_ = read_colmap_text(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Scene scene_;
  fs::path dir_;
  ColmapModel model_;
};

TEST_F(SceneExportColmap, FilesStartWithTheHeadersColmapWrites) {
  const auto cameras = lines_of(dir_ / "cameras.txt");
  ASSERT_GE(cameras.size(), 3u);
  EXPECT_EQ(cameras[0], "# Camera list with one line of data per camera:");
  EXPECT_EQ(cameras[1], "#   CAMERA_ID, MODEL, WIDTH, HEIGHT, PARAMS[]");
  EXPECT_EQ(cameras[2], "# Number of cameras: 6");
  const auto images = lines_of(dir_ / "images.txt");
  ASSERT_GE(images.size(), 4u);
  EXPECT_EQ(images[0], "# Image list with two lines of data per image:");
  EXPECT_EQ(images[1], "#   IMAGE_ID, QW, QX, QY, QZ, TX, TY, TZ, CAMERA_ID, NAME");
  EXPECT_EQ(images[2], "#   POINTS2D[] as (X, Y, POINT3D_ID)");
  EXPECT_EQ(images[3].rfind("# Number of images: 6, mean observations per image: ", 0), 0u) << images[3];
  const auto points = lines_of(dir_ / "points3D.txt");
  ASSERT_GE(points.size(), 3u);
  EXPECT_EQ(points[0], "# 3D point list with one line of data per point:");
  EXPECT_EQ(points[1], "#   POINT3D_ID, X, Y, Z, R, G, B, ERROR, TRACK[] as (IMAGE_ID, POINT2D_IDX)");
  EXPECT_EQ(points[2].rfind("# Number of points: 2000, mean track length: ", 0), 0u) << points[2];
  // Two lines per image, one per camera and point.
  EXPECT_EQ(images.size(), 4u + 2 * 6);
  EXPECT_EQ(cameras.size(), 3u + 6);
  EXPECT_EQ(points.size(), 3u + 2000);
}

TEST_F(SceneExportColmap, CamerasArePinholeWithTheSceneIntrinsics) {
  ASSERT_EQ(model_.cameras.size(), scene_.cameras.size());
  for (size_t i = 0; i < scene_.cameras.size(); ++i) {
    const SceneCamera& c = scene_.cameras[i];
    const ColmapCamera& parsed = model_.cameras.at(static_cast<int>(i) + 1);
    EXPECT_EQ(parsed.model, "PINHOLE");
    EXPECT_EQ(parsed.width, c.width);
    EXPECT_EQ(parsed.height, c.height);
    EXPECT_EQ(parsed.params, (std::vector<double>{c.fx, c.fy, c.cx, c.cy}));
  }
}

TEST_F(SceneExportColmap, QuaternionAndTranslationReproduceEachWorldToCameraTransform) {
  ASSERT_EQ(model_.images.size(), scene_.cameras.size());
  for (size_t i = 0; i < scene_.cameras.size(); ++i) {
    const ColmapImage& image = model_.images.at(static_cast<int>(i) + 1);
    EXPECT_EQ(image.camera_id, static_cast<int>(i) + 1);
    EXPECT_EQ(image.name, scene_.cameras[i].image_name);
    EXPECT_GE(image.q[0], 0);
    EXPECT_NEAR(image.q[0] * image.q[0] + image.q[1] * image.q[1] + image.q[2] * image.q[2] + image.q[3] * image.q[3],
                1.0, 1e-12);
    const Mat3 r = quaternion_to_rotation(image.q[0], image.q[1], image.q[2], image.q[3]);
    const Mat3 expected = world_to_camera_rotation(scene_.cameras[i]);
    for (int k = 0; k < 9; ++k) EXPECT_NEAR(r[k], expected[k], 1e-9) << "camera " << i << " element " << k;
    const Vec3 t = world_to_camera_translation(scene_.cameras[i]);
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(image.t[k], t[k], 1e-9) << "camera " << i;
  }
}

TEST_F(SceneExportColmap, EachTrackElementIndexesItsPixelAndItsPoint) {
  std::vector<size_t> observations(scene_.cameras.size(), 0);
  ASSERT_EQ(model_.points.size(), scene_.points.size());
  for (size_t p = 0; p < scene_.points.size(); ++p) {
    const ScenePoint& point = scene_.points[p];
    const ColmapPoint3D& parsed = model_.points.at(static_cast<long>(p) + 1);
    EXPECT_EQ(parsed.xyz[0], point.x);
    EXPECT_EQ(parsed.xyz[1], point.y);
    EXPECT_EQ(parsed.xyz[2], point.z);
    EXPECT_EQ(parsed.rgb[0], point.r);
    EXPECT_EQ(parsed.rgb[1], point.g);
    EXPECT_EQ(parsed.rgb[2], point.b);
    ASSERT_EQ(parsed.track.size(), point.track.size()) << "point " << p;
    for (size_t k = 0; k < point.track.size(); ++k) {
      const auto [image_id, idx] = parsed.track[k];
      ASSERT_EQ(image_id, point.track[k].camera + 1);
      const auto& points2d = model_.images.at(image_id).points2d;
      ASSERT_LT(static_cast<size_t>(idx), points2d.size());
      EXPECT_EQ(points2d[idx].x, point.track[k].x);
      EXPECT_EQ(points2d[idx].y, point.track[k].y);
      EXPECT_EQ(points2d[idx].point3d_id, static_cast<long>(p) + 1);
      ++observations[point.track[k].camera];
    }
  }
  // No POINTS2D entry that no track refers to.
  for (size_t i = 0; i < scene_.cameras.size(); ++i)
    EXPECT_EQ(model_.images.at(static_cast<int>(i) + 1).points2d.size(), observations[i]) << "camera " << i;
}

TEST_F(SceneExportColmap, ReprojectingEachPointThroughTheParsedModelGivesItsObservedPixel) {
  size_t checked = 0;
  for (const auto& [id, point] : model_.points) {
    for (const auto& [image_id, idx] : point.track) {
      const auto [u, v] = reproject(model_, image_id, point.xyz);
      const ColmapPoint2D& seen = model_.images.at(image_id).points2d.at(idx);
      EXPECT_NEAR(u, seen.x, 1e-3) << "point " << id << " in image " << image_id;
      EXPECT_NEAR(v, seen.y, 1e-3) << "point " << id << " in image " << image_id;
      ++checked;
    }
    EXPECT_LT(point.error, 1e-3) << "point " << id;
  }
  EXPECT_GT(checked, 2000u);  // the scene is seen, not vacuously checked
}

TEST_F(SceneExportColmap, ColmapModelConverterReadsAndRewritesTheSameModel) {
  if (std::system("command -v colmap >/dev/null 2>&1") != 0) GTEST_SKIP() << "colmap is not on PATH";
  const fs::path bin = temp_dir("colmap-bin"), txt = temp_dir("colmap-txt");
  const std::string to_bin = "colmap model_converter --input_path " + dir_.string() + " --output_path " + bin.string() +
                             " --output_type BIN >/dev/null 2>&1";
  const std::string to_txt = "colmap model_converter --input_path " + bin.string() + " --output_path " + txt.string() +
                             " --output_type TXT >/dev/null 2>&1";
  ASSERT_EQ(std::system(to_bin.c_str()), 0) << to_bin;
  ASSERT_EQ(std::system(to_txt.c_str()), 0) << to_txt;
  const ColmapModel back = read_colmap_text(txt);
  ASSERT_EQ(back.cameras.size(), model_.cameras.size());
  ASSERT_EQ(back.images.size(), model_.images.size());
  ASSERT_EQ(back.points.size(), model_.points.size());
  for (const auto& [id, c] : model_.cameras) EXPECT_EQ(back.cameras.at(id).params, c.params);
  for (const auto& [id, image] : model_.images) {
    const ColmapImage& b = back.images.at(id);
    EXPECT_EQ(b.name, image.name);
    for (int k = 0; k < 4; ++k) EXPECT_NEAR(b.q[k], image.q[k], 1e-12);
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(b.t[k], image.t[k], 1e-12);
    ASSERT_EQ(b.points2d.size(), image.points2d.size());
  }
  for (const auto& [id, p] : model_.points) {
    EXPECT_EQ(back.points.at(id).xyz[0], p.xyz[0]);
    EXPECT_EQ(back.points.at(id).track.size(), p.track.size());
  }
  fs::remove_all(bin);
  fs::remove_all(txt);
}

TEST(SceneExport, QuaternionReproducesRotationsOfEveryAngleIncludingHalfTurns) {
  const Vec3 axes[] = {
      {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, normalized({1, 1, 0}), normalized({-1, 2, 3}), normalized({0.3, -0.2, -0.9})};
  for (const Vec3& a : axes) {
    for (double angle : {0.0, 0.1, 1.0, 2.0, 3.0, std::numbers::pi - 1e-9, std::numbers::pi, -2.5}) {
      const double s = std::sin(angle / 2), w = std::cos(angle / 2);
      const Mat3 r = quaternion_to_rotation(w, a[0] * s, a[1] * s, a[2] * s);
      const std::array<double, 4> q = rotation_to_quaternion(r);
      EXPECT_GE(q[0], 0);
      const Mat3 back = quaternion_to_rotation(q[0], q[1], q[2], q[3]);
      for (int k = 0; k < 9; ++k) EXPECT_NEAR(back[k], r[k], 1e-14) << "angle " << angle;
    }
  }
}

TEST(SceneExport, ColmapRefusesAnImageNameWithASpace) {
  Scene scene = synthetic_scene();
  scene.cameras[2].image_name = "holiday photo.jpg";
  const fs::path dir = temp_dir("colmap-space");
  const Status status = write_colmap_text(dir.string(), scene);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("holiday photo.jpg"), std::string::npos) << status.message();
  fs::remove_all(dir);
}

TEST(SceneExport, WritersRefuseAPoseThatIsNotRigidAndNameTheCamera) {
  Scene scene = synthetic_scene();
  for (int k : {0, 1, 2, 4, 5, 6, 8, 9, 10}) scene.cameras[3].cam_to_world[k] *= 2;
  const fs::path dir = temp_dir("not-rigid");
  for (const Status& status :
       {write_colmap_text(dir.string(), scene), write_cameras_json((dir / "cameras.json").string(), scene)}) {
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find("img_003.jpg"), std::string::npos) << status.message();
  }
  EXPECT_FALSE(fs::exists(dir / "cameras.txt"));
  fs::remove_all(dir);
}

TEST(SceneExport, WritersRefuseAnObservationOfACameraThatDoesNotExist) {
  Scene scene = synthetic_scene();
  scene.points[7].track.push_back({6, 1, 1});
  const fs::path dir = temp_dir("bad-camera");
  const Status status = write_colmap_text(dir.string(), scene);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("point 7"), std::string::npos) << status.message();
  fs::remove_all(dir);
}

TEST(SceneExport, WritingIntoAMissingDirectoryReturnsAStatusNamingThePath) {
  const Scene scene = synthetic_scene();
  const fs::path missing = fs::temp_directory_path() / ("recon-scene-missing-" + std::to_string(::getpid()));
  fs::remove_all(missing);
  const std::string json = (missing / "cameras.json").string(), ply = (missing / "points.ply").string();
  Status status;
  EXPECT_NO_THROW(status = write_cameras_json(json, scene));
  EXPECT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find(json), std::string::npos) << status.message();
  EXPECT_NO_THROW(status = write_scene_ply(ply, scene));
  EXPECT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find(ply), std::string::npos) << status.message();
  EXPECT_NO_THROW(status = write_colmap_text(missing.string(), scene));
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_NE(status.message().find(missing.string()), std::string::npos) << status.message();
  EXPECT_FALSE(fs::exists(missing));
}

// ---- JSON ----

TEST(SceneExport, CamerasJsonParsesAndHoldsEveryNumberExactly) {
  const Scene scene = synthetic_scene();
  const fs::path dir = temp_dir("json");
  ASSERT_TRUE(write_cameras_json((dir / "cameras.json").string(), scene).is_ok());
  const std::optional<Json> doc = JsonReader(read_file(dir / "cameras.json")).parse();
  ASSERT_TRUE(doc.has_value()) << read_file(dir / "cameras.json");
  const Json& cameras = (*doc)["cameras"];
  ASSERT_EQ(cameras.kind, Json::kArray);
  ASSERT_EQ(cameras.items.size(), scene.cameras.size());
  for (size_t i = 0; i < scene.cameras.size(); ++i) {
    const SceneCamera& c = scene.cameras[i];
    const Json& j = cameras.items[i];
    EXPECT_EQ(j["image"].text, c.image_name);
    EXPECT_EQ(j["width"].number, c.width);
    EXPECT_EQ(j["height"].number, c.height);
    EXPECT_EQ(j["fx"].number, c.fx);
    EXPECT_EQ(j["fy"].number, c.fy);
    EXPECT_EQ(j["cx"].number, c.cx);
    EXPECT_EQ(j["cy"].number, c.cy);
    EXPECT_EQ(j["component"].number, c.component);
    const Json& m = j["cam_to_world"];
    ASSERT_EQ(m.items.size(), 4u);
    for (int row = 0; row < 4; ++row) {
      ASSERT_EQ(m.items[row].items.size(), 4u);
      for (int col = 0; col < 4; ++col)
        EXPECT_EQ(m.items[row].items[col].number, c.cam_to_world[row * 4 + col]) << row << "," << col;
    }
  }
  fs::remove_all(dir);
}

TEST(SceneExport, CamerasJsonEscapesAnyImageNameIntoAValidString) {
  Scene scene = synthetic_scene();
  scene.cameras[0].image_name = "a \"quoted\" \\ name\twith\ncontrols and caf\xc3\xa9";
  scene.cameras[1].image_name = "broken \xff\xc3 utf8";
  const fs::path dir = temp_dir("json-escape");
  ASSERT_TRUE(write_cameras_json((dir / "cameras.json").string(), scene).is_ok());
  const std::optional<Json> doc = JsonReader(read_file(dir / "cameras.json")).parse();
  ASSERT_TRUE(doc.has_value()) << read_file(dir / "cameras.json");
  EXPECT_EQ((*doc)["cameras"].items[0]["image"].text, scene.cameras[0].image_name);
  EXPECT_EQ((*doc)["cameras"].items[1]["image"].text, "broken \xef\xbf\xbd\xef\xbf\xbd utf8");
  fs::remove_all(dir);
}

// ---- PLY ----

TEST(SceneExport, PlyHasItsHeaderAndFifteenBytesPerPoint) {
  const Scene scene = synthetic_scene();
  const fs::path dir = temp_dir("ply");
  ASSERT_TRUE(write_scene_ply((dir / "points.ply").string(), scene).is_ok());
  const std::string bytes = read_file(dir / "points.ply");
  const std::string end = "end_header\n";
  const size_t header = bytes.find(end);
  ASSERT_NE(header, std::string::npos);
  EXPECT_EQ(bytes.rfind("ply\nformat binary_little_endian 1.0\n", 0), 0u);
  EXPECT_NE(bytes.find("element vertex 2000\n"), std::string::npos);
  EXPECT_EQ(bytes.size(), header + end.size() + 15 * scene.points.size());
  const size_t record9 = header + end.size() + size_t{15} * 9;
  float xyz[3];
  std::memcpy(xyz, bytes.data() + record9, 12);
  EXPECT_EQ(xyz[0], scene.points[9].x);
  EXPECT_EQ(xyz[2], scene.points[9].z);
  EXPECT_EQ(static_cast<uint8_t>(bytes[record9 + 13]), scene.points[9].g);
  fs::remove_all(dir);
}

// ---- The picture ----

size_t count_pixels(const Image& img, const std::array<uint8_t, 3>& rgb, int x0 = 0, int x1 = -1) {
  size_t n = 0;
  for (int y = 0; y < img.height; ++y) {
    for (int x = x0; x < (x1 < 0 ? img.width : x1); ++x) {
      const uint8_t* p = &img.pixels[(static_cast<size_t>(y) * img.width + x) * 3];
      n += p[0] == rgb[0] && p[1] == rgb[1] && p[2] == rgb[2];
    }
  }
  return n;
}

TEST(ScenePicture, ShowsThePointsOnABackgroundAndEveryCameraInItsColour) {
  const Scene scene = synthetic_scene();
  const Image img = render_scene_picture(scene, 960, 540);
  ASSERT_EQ(img.width, 960);
  ASSERT_EQ(img.height, 540);
  ASSERT_EQ(img.pixels.size(), 960u * 540 * 3);
  const std::array<uint8_t, 3> background = {img.pixels[0], img.pixels[1], img.pixels[2]};
  EXPECT_LT(background[0], 64);
  const size_t drawn = img.pixels.size() / 3 - count_pixels(img, background);
  EXPECT_GT(drawn, img.pixels.size() / 3 / 100) << "fewer than 1 % of the pixels show anything";
  for (int i = 0; i < 6; ++i) EXPECT_GT(count_pixels(img, scene_camera_color(i)), 40u) << "camera " << i;
  if (const char* out = std::getenv("RECON_SCENE_PICTURE_DIR")) {
    ASSERT_TRUE(save_png((fs::path(out) / "scene_picture.png").string(), img).is_ok());
    ASSERT_TRUE(
        save_png((fs::path(out) / "scene_overview.png").string(), render_scene_overview(scene, 1600, 600)).is_ok());
  }
}

TEST(ScenePicture, SameSceneGivesTheSamePixels) {
  const Scene scene = synthetic_scene();
  EXPECT_EQ(render_scene_picture(scene, 640, 360).pixels, render_scene_picture(scene, 640, 360).pixels);
  EXPECT_EQ(render_scene_overview(scene, 640, 240).pixels, render_scene_overview(scene, 640, 240).pixels);
}

TEST(ScenePicture, OverviewShowsTheCamerasInBothHalves) {
  const Scene scene = synthetic_scene();
  const Image img = render_scene_overview(scene, 1200, 450);
  ASSERT_EQ(img.width, 1200);
  ASSERT_EQ(img.height, 450);
  for (int i = 0; i < 6; ++i) {
    EXPECT_GT(count_pixels(img, scene_camera_color(i), 0, 600), 20u) << "camera " << i << ", left";
    EXPECT_GT(count_pixels(img, scene_camera_color(i), 600, 1200), 20u) << "camera " << i << ", right";
  }
}

TEST(ScenePicture, EmptySceneIsJustTheBackground) {
  const Image img = render_scene_overview(Scene{}, 200, 100);
  ASSERT_EQ(img.pixels.size(), 200u * 100 * 3);
  const std::array<uint8_t, 3> background = {img.pixels[0], img.pixels[1], img.pixels[2]};
  EXPECT_EQ(count_pixels(img, background, 0, 100), 100u * 100);
}

}  // namespace
}  // namespace recon::io
