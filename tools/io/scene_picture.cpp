#include "tools/io/scene_picture.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

namespace recon::io {
namespace {

constexpr uint8_t kBackground = 38;
constexpr double kVerticalFov = 45.0 * std::numbers::pi / 180.0;
constexpr double kMainElevation = 30.0 * std::numbers::pi / 180.0;

struct Vec3 {
  double x = 0, y = 0, z = 0;

  friend Vec3 operator+(Vec3 a, Vec3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
  friend Vec3 operator-(Vec3 a, Vec3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
  friend Vec3 operator*(Vec3 a, double s) { return {a.x * s, a.y * s, a.z * s}; }
  friend double dot(Vec3 a, Vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
  friend double norm(Vec3 a) { return std::sqrt(dot(a, a)); }
  friend Vec3 normalized(Vec3 a) { return a * (1.0 / norm(a)); }
  friend Vec3 cross(Vec3 a, Vec3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
  // This vector without its component along the unit vector `n`.
  Vec3 reject(Vec3 n) const { return *this - n * dot(*this, n); }
};

Vec3 centre_of(const SceneCamera& c) {
  return {c.cam_to_world[3], c.cam_to_world[7], c.cam_to_world[11]};
}
// Column `col` of the camera-to-world rotation: the camera's x (right), y (down) or z (forward) axis.
Vec3 axis_of(const SceneCamera& c, int col) {
  return {c.cam_to_world[col], c.cam_to_world[4 + col], c.cam_to_world[8 + col]};
}

bool camera_is_finite(const SceneCamera& c) {
  return std::all_of(c.cam_to_world.begin(), c.cam_to_world.end(), [](double v) { return std::isfinite(v); }) &&
         std::isfinite(c.fx) && std::isfinite(c.fy) && std::isfinite(c.cx) && std::isfinite(c.cy) && c.fx > 0 &&
         c.fy > 0;
}

// What both viewpoints are built from: where to look, which way is up and ahead, and what must fit.
struct SceneFrame {
  Vec3 target;
  Vec3 up;
  Vec3 ahead;  // horizontal (perpendicular to up): the direction the viewer faces
  double extent = 1;
  std::vector<Vec3> must_fit;
};

SceneFrame frame_scene(const Scene& scene) {
  SceneFrame f;
  // The 5-95 % box per axis of the finite points, so that a few stray points do not shrink the rest.
  std::vector<float> coords[3];
  for (const ScenePoint& p : scene.points) {
    if (!(std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z))) continue;
    coords[0].push_back(p.x);
    coords[1].push_back(p.y);
    coords[2].push_back(p.z);
  }
  const bool has_points = !coords[0].empty();
  if (has_points) {
    double bounds[3][2];
    for (int axis = 0; axis < 3; ++axis) {
      std::vector<float>& values = coords[axis];
      for (int side = 0; side < 2; ++side) {
        const auto k = static_cast<long>((side == 0 ? 0.05 : 0.95) * static_cast<double>(values.size() - 1));
        std::nth_element(values.begin(), values.begin() + k, values.end());
        bounds[axis][side] = values[k];
      }
    }
    const Vec3 lo = {bounds[0][0], bounds[1][0], bounds[2][0]};
    const Vec3 hi = {bounds[0][1], bounds[1][1], bounds[2][1]};
    for (int corner = 0; corner < 8; ++corner)
      f.must_fit.push_back({corner & 1 ? hi.x : lo.x, corner & 2 ? hi.y : lo.y, corner & 4 ? hi.z : lo.z});
    f.target = (lo + hi) * 0.5;
  }
  Vec3 mean_centre, mean_down, mean_forward;
  double n = 0;
  for (const SceneCamera& c : scene.cameras) {
    if (!camera_is_finite(c)) continue;
    const Vec3 centre = centre_of(c);
    n += 1;
    f.must_fit.push_back(centre);
    mean_centre = mean_centre + centre;
    mean_down = mean_down + axis_of(c, 1);
    mean_forward = mean_forward + axis_of(c, 2);
  }
  n = std::max(n, 1.0);
  mean_centre = mean_centre * (1 / n);
  mean_down = mean_down * (1 / n);
  mean_forward = mean_forward * (1 / n);
  if (!has_points) f.target = mean_centre;

  Vec3 box_lo = f.must_fit.empty() ? Vec3{} : f.must_fit[0], box_hi = box_lo;
  for (const Vec3& p : f.must_fit) {
    box_lo = {std::min(box_lo.x, p.x), std::min(box_lo.y, p.y), std::min(box_lo.z, p.z)};
    box_hi = {std::max(box_hi.x, p.x), std::max(box_hi.y, p.y), std::max(box_hi.z, p.z)};
  }
  f.extent = norm(box_hi - box_lo);
  if (!(f.extent > 1e-9)) f.extent = 1;

  // Up is against the cameras' mean image-down axis; where they disagree, against the world's y,
  // which is image-down of the first camera in MASt3R's frame.
  f.up = norm(mean_down) > 0.3 ? normalized(mean_down * -1.0) : Vec3{0, -1, 0};
  // Ahead: the cameras' mean viewing direction. Where that cancels out (cameras around an object),
  // the viewer stands in the widest gap between the cameras seen from above the target, so that no
  // camera stands between the viewer and the points.
  const Vec3 mean_ahead = mean_forward.reject(f.up);
  if (norm(mean_ahead) > 0.3) {
    f.ahead = normalized(mean_ahead);
    return f;
  }
  const Vec3 e1 =
      normalized(norm(Vec3{1, 0, 0}.reject(f.up)) > 0.5 ? Vec3{1, 0, 0}.reject(f.up) : Vec3{0, 0, 1}.reject(f.up));
  const Vec3 e2 = cross(f.up, e1);
  std::vector<double> azimuths;
  for (const SceneCamera& c : scene.cameras) {
    const Vec3 d = (centre_of(c) - f.target).reject(f.up);
    if (camera_is_finite(c) && norm(d) > 1e-6 * f.extent) azimuths.push_back(std::atan2(dot(d, e2), dot(d, e1)));
  }
  double eye_azimuth = 0;
  if (!azimuths.empty()) {
    std::sort(azimuths.begin(), azimuths.end());
    double widest = -1;
    for (size_t i = 0; i < azimuths.size(); ++i) {
      const double from = azimuths[i];
      const double to = i + 1 < azimuths.size() ? azimuths[i + 1] : azimuths[0] + 2 * std::numbers::pi;
      if (to - from > widest) {
        widest = to - from;
        eye_azimuth = (from + to) / 2;
      }
    }
  }
  f.ahead = (e1 * std::cos(eye_azimuth) + e2 * std::sin(eye_azimuth)) * -1.0;
  return f;
}

// A pinhole viewer: OpenCV axes, principal point at the picture's centre.
struct View {
  Vec3 eye, right, down, forward;
  double focal = 1, cx = 0, cy = 0;
  int width = 0, height = 0;

  Vec3 to_view(Vec3 p) const {
    const Vec3 d = p - eye;
    return {dot(d, right), dot(d, down), dot(d, forward)};
  }
  double px(Vec3 p) const { return focal * p.x / p.z + cx; }
  double py(Vec3 p) const { return focal * p.y / p.z + cy; }
};

// Looks at the target from `elevation` above the horizontal, from as close as keeps every
// must-fit point inside the picture with a margin.
View orbit_view(const SceneFrame& f, double elevation, int width, int height) {
  View view;
  view.width = width;
  view.height = height;
  view.forward = f.ahead * std::cos(elevation) - f.up * std::sin(elevation);
  view.down = (f.up * -std::cos(elevation)) - f.ahead * std::sin(elevation);
  view.right = cross(view.down, view.forward);  // x = y cross z for OpenCV axes
  const double tan_v = std::tan(kVerticalFov / 2) * 0.88;
  const double tan_h = tan_v * width / height;
  double distance = 0.1 * f.extent;
  for (const Vec3& p : f.must_fit) {
    const Vec3 r = p - f.target;
    const double need = std::max(std::abs(dot(r, view.right)) / tan_h, std::abs(dot(r, view.down)) / tan_v);
    distance = std::max(distance, need - dot(r, view.forward));
  }
  view.eye = f.target - view.forward * distance;
  view.focal = (height / 2.0) / std::tan(kVerticalFov / 2);
  view.cx = width / 2.0;
  view.cy = height / 2.0;
  return view;
}

void put(Image& img, int x, int y, const uint8_t* rgb) {
  if (x < 0 || y < 0 || x >= img.width || y >= img.height) return;
  std::copy(rgb, rgb + 3, &img.pixels[(static_cast<size_t>(y) * img.width + x) * 3]);
}

// A 2-pixel-wide segment between two picture points, clipped to the picture (Liang-Barsky).
void draw_line(Image& img, double x0, double y0, double x1, double y1, const uint8_t* rgb) {
  double t0 = 0, t1 = 1;
  const double dx = x1 - x0, dy = y1 - y0;
  const double p[4] = {-dx, dx, -dy, dy};
  const double q[4] = {x0 + 2, img.width + 1 - x0, y0 + 2, img.height + 1 - y0};
  for (int i = 0; i < 4; ++i) {
    if (p[i] == 0) {
      if (q[i] < 0) return;
      continue;
    }
    const double t = q[i] / p[i];
    if (p[i] < 0) t0 = std::max(t0, t);
    if (p[i] > 0) t1 = std::min(t1, t);
  }
  if (t0 > t1) return;
  const int steps = static_cast<int>(std::ceil(std::max(std::abs(dx), std::abs(dy)) * (t1 - t0))) + 1;
  for (int s = 0; s <= steps; ++s) {
    const double t = t0 + (t1 - t0) * s / steps;
    const int x = static_cast<int>(std::floor(x0 + dx * t)), y = static_cast<int>(std::floor(y0 + dy * t));
    put(img, x, y, rgb);
    put(img, x + 1, y, rgb);
    put(img, x, y + 1, rgb);
    put(img, x + 1, y + 1, rgb);
  }
}

// A world-space segment, cut where it passes behind the viewer.
void draw_segment(Image& img, const View& view, Vec3 a, Vec3 b, double near, const uint8_t* rgb) {
  Vec3 va = view.to_view(a), vb = view.to_view(b);
  if (va.z < near && vb.z < near) return;
  if (va.z < near) va = va + (vb - va) * ((near - va.z) / (vb.z - va.z));
  if (vb.z < near) vb = vb + (va - vb) * ((near - vb.z) / (va.z - vb.z));
  draw_line(img, view.px(va), view.py(va), view.px(vb), view.py(vb), rgb);
}

// 3x5 digits, one row per entry, bit 2 the left column.
constexpr uint8_t kDigits[10][5] = {{7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7},
                                    {5, 5, 7, 1, 1}, {7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1},
                                    {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7}};

// `text` (digits only) with its top-left at (x, y), each font pixel `scale` pixels, on a dark shadow.
void draw_number(Image& img, int x, int y, const std::string& text, int scale, const uint8_t* rgb) {
  const uint8_t shadow[3] = {0, 0, 0};
  for (int pass = 0; pass < 2; ++pass) {
    const int offset = pass == 0 ? 1 : 0;
    for (size_t i = 0; i < text.size(); ++i) {
      const int digit = text[i] - '0';
      for (int row = 0; row < 5; ++row) {
        for (int col = 0; col < 3; ++col) {
          if (!(kDigits[digit][row] & (4 >> col))) continue;
          const int left = x + offset + (static_cast<int>(i) * 4 + col) * scale, top = y + offset + row * scale;
          for (int sy = 0; sy < scale; ++sy)
            for (int sx = 0; sx < scale; ++sx) put(img, left + sx, top + sy, pass == 0 ? shadow : rgb);
        }
      }
    }
  }
}

Image render_view(const Scene& scene, const SceneFrame& frame, double elevation, int width, int height) {
  Image img;
  img.width = std::max(width, 0);
  img.height = std::max(height, 0);
  img.pixels.assign(static_cast<size_t>(img.width) * img.height * 3, kBackground);
  if (img.width == 0 || img.height == 0) return img;
  const View view = orbit_view(frame, elevation, width, height);
  const double near = 1e-3 * frame.extent;

  // Points, 2x2 splats, nearest wins.
  std::vector<float> depth(static_cast<size_t>(width) * height, std::numeric_limits<float>::infinity());
  for (const ScenePoint& p : scene.points) {
    const Vec3 v = view.to_view({p.x, p.y, p.z});
    if (!(v.z > near)) continue;
    const double u = view.px(v), w = view.py(v);
    if (!(u > -2 && w > -2 && u < width + 2 && w < height + 2)) continue;
    const int x0 = static_cast<int>(std::floor(u + 0.5)) - 1, y0 = static_cast<int>(std::floor(w + 0.5)) - 1;
    const uint8_t rgb[3] = {p.r, p.g, p.b};
    for (int y = y0; y < y0 + 2; ++y) {
      for (int x = x0; x < x0 + 2; ++x) {
        if (x < 0 || y < 0 || x >= width || y >= height) continue;
        float& d = depth[static_cast<size_t>(y) * width + x];
        if (v.z < d) {
          d = static_cast<float>(v.z);
          put(img, x, y, rgb);
        }
      }
    }
  }

  // Cameras on top of the points, so that none is hidden: a pyramid from the centre to the image
  // corners at 5 % of the scene's extent, a tick on the image's top edge, and the index.
  const double frustum_depth = 0.05 * frame.extent;
  const int label_scale = std::max(2, height / 180);
  for (size_t i = 0; i < scene.cameras.size(); ++i) {
    const SceneCamera& c = scene.cameras[i];
    if (!camera_is_finite(c)) continue;
    const std::array<uint8_t, 3> color = scene_camera_color(static_cast<int>(i));
    const Vec3 centre = centre_of(c);
    auto at_pixel = [&](double px, double py) {
      const Vec3 local = {(px - c.cx) / c.fx * frustum_depth, (py - c.cy) / c.fy * frustum_depth, frustum_depth};
      return centre + axis_of(c, 0) * local.x + axis_of(c, 1) * local.y + axis_of(c, 2) * local.z;
    };
    const Vec3 corners[4] = {at_pixel(0, 0), at_pixel(c.width, 0), at_pixel(c.width, c.height), at_pixel(0, c.height)};
    for (int k = 0; k < 4; ++k) {
      draw_segment(img, view, centre, corners[k], near, color.data());
      draw_segment(img, view, corners[k], corners[(k + 1) % 4], near, color.data());
    }
    const Vec3 tick = at_pixel(c.width / 2.0, -0.25 * c.height);
    draw_segment(img, view, corners[0], tick, near, color.data());
    draw_segment(img, view, tick, corners[1], near, color.data());
    // The index beside the centre, on the side away from the frustum.
    const Vec3 v = view.to_view(centre), tip = view.to_view(at_pixel(c.cx, c.cy));
    if (v.z > near && tip.z > near) {
      const double u = view.px(v), w = view.py(v);
      double du = u - view.px(tip), dw = w - view.py(tip);
      const double len = std::hypot(du, dw);
      du = len > 1 ? du / len : 1;
      dw = len > 1 ? dw / len : 0;
      const std::string text = std::to_string(i);
      const double half_w = (4.0 * text.size() - 1) * label_scale / 2, half_h = 2.5 * label_scale;
      const double reach = std::max(half_w, half_h) + 2 * label_scale;
      if (std::abs(u) < 4.0 * width && std::abs(w) < 4.0 * height) {
        draw_number(img, static_cast<int>(std::lround(u + du * reach - half_w)),
                    static_cast<int>(std::lround(w + dw * reach - half_h)), text, label_scale, color.data());
      }
    }
  }
  return img;
}

}  // namespace

std::array<uint8_t, 3> scene_camera_color(int index) {
  static constexpr std::array<uint8_t, 3> kPalette[8] = {{255, 60, 60}, {40, 220, 255}, {255, 220, 0},   {255, 70, 255},
                                                         {70, 255, 70}, {255, 150, 20}, {160, 120, 255}, {0, 255, 190}};
  return kPalette[((index % 8) + 8) % 8];
}

Image render_scene_picture(const Scene& scene, int width, int height) {
  return render_view(scene, frame_scene(scene), kMainElevation, width, height);
}

Image render_scene_overview(const Scene& scene, int width, int height) {
  if (width < 2 || height < 1) return render_scene_picture(scene, width, height);
  const SceneFrame frame = frame_scene(scene);
  const int left_width = width / 2;
  const Image left = render_view(scene, frame, kMainElevation, left_width, height);
  const Image right = render_view(scene, frame, std::numbers::pi / 2, width - left_width, height);
  Image img;
  img.width = width;
  img.height = height;
  img.pixels.resize(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    std::copy_n(&left.pixels[static_cast<size_t>(y) * left.stride()], left.stride(), &img.pixels[y * img.stride()]);
    std::copy_n(&right.pixels[static_cast<size_t>(y) * right.stride()], right.stride(),
                &img.pixels[y * img.stride() + left.stride()]);
  }
  const uint8_t separator[3] = {110, 110, 110};
  for (int y = 0; y < height; ++y) put(img, left_width, y, separator);
  return img;
}

}  // namespace recon::io
