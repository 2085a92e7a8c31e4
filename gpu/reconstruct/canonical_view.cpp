// Canonical views from streamed own-frame predictions: see canonical_view.h.
#include "gpu/reconstruct/canonical_view.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <string>

#include "gpu/reconstruct/focal_estimate.h"

namespace recon::gpu {

namespace {

std::string pixel_name(std::size_t p, int width) {
  return "(" + std::to_string(p % static_cast<std::size_t>(width)) + ", " +
         std::to_string(p / static_cast<std::size_t>(width)) + ")";
}

}  // namespace

CanonicalViewBuilder::CanonicalViewBuilder(int height, int width, int subsample)
    : height_(height), width_(width), subsample_(subsample) {
  const std::string shape = std::to_string(height) + "x" + std::to_string(width);
  if (height <= 0 || width <= 0 || subsample <= 0) {
    status_ = invalid_argument("canonical view of size " + shape + " with subsample " + std::to_string(subsample) +
                               ": sizes must be positive");
    return;
  }
  if (height % subsample != 0 || width % subsample != 0) {
    status_ = invalid_argument("canonical view of size " + shape + ": not a multiple of subsample " +
                               std::to_string(subsample));
    return;
  }
  if (static_cast<long long>(height) * width > kMaxPixels) {
    status_ =
        invalid_argument("canonical view of size " + shape + ": more than " + std::to_string(kMaxPixels) + " pixels");
    return;
  }
  const std::size_t n = static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
  sum_wx_.assign(3 * n, 0.0);
  sum_w_.assign(n, 0.0);
  sum_w2_.assign(n, 0.0);
  sum_w_angle_.assign(n, 0.0);
  sum_radius_.assign(n, 0.0);
}

void CanonicalViewBuilder::add(std::span<const float> pts3d, std::span<const float> conf) {
  add_impl(pts3d, conf);
}

void CanonicalViewBuilder::add(std::span<const double> pts3d, std::span<const double> conf) {
  add_impl(pts3d, conf);
}

template <typename T>
void CanonicalViewBuilder::add_impl(std::span<const T> pts3d, std::span<const T> conf) {
  if (sum_w_.empty()) return;  // refused at construction; status_ says why
  const std::size_t n = sum_w_.size();
  const int index = count_ + refused_;
  const auto refuse = [&](const std::string& why) {
    if (status_.is_ok()) status_ = invalid_argument("own-frame prediction " + std::to_string(index) + ": " + why);
    ++refused_;
  };
  if (pts3d.size() != 3 * n || conf.size() != n) {
    refuse("got " + std::to_string(pts3d.size()) + " point values and " + std::to_string(conf.size()) +
           " confidences for a " + std::to_string(height_) + "x" + std::to_string(width_) + " image");
    return;
  }
  // Check everything before touching the sums, so that a refused prediction leaves no trace.
  for (std::size_t p = 0; p < n; ++p) {
    if (!std::isfinite(pts3d[3 * p]) || !std::isfinite(pts3d[3 * p + 1]) || !std::isfinite(pts3d[3 * p + 2])) {
      refuse("non-finite point at pixel " + pixel_name(p, width_));
      return;
    }
    // The weight C - 0.999 must be positive (the network's 1 + exp(.) always is); NaN fails too.
    if (!(static_cast<double>(conf[p]) > 0.999) || !std::isfinite(conf[p])) {
      refuse("confidence " + std::to_string(static_cast<double>(conf[p])) + " at pixel " + pixel_name(p, width_) +
             " is not a finite value above 0.999");
      return;
    }
  }

  const int s = subsample_;
  const int half = s / 2;
  for (int y = 0; y < height_; ++y) {
    const int ay = (y / s) * s + half;
    for (int x = 0; x < width_; ++x) {
      const int ax = (x / s) * s + half;
      const std::size_t p = static_cast<std::size_t>(y) * width_ + x;
      const std::size_t a = static_cast<std::size_t>(ay) * width_ + ax;
      const double w = static_cast<double>(conf[p]) - 0.999;
      const double px = pts3d[3 * p], py = pts3d[3 * p + 1], pz = pts3d[3 * p + 2];
      sum_wx_[3 * p] += w * px;
      sum_wx_[3 * p + 1] += w * py;
      sum_wx_[3 * p + 2] += w * pz;
      sum_w_[p] += w;
      sum_w2_[p] += w * w;
      // The official clips the anchor depth at float32's epsilon (its pointmaps are float32).
      const double za = std::max(static_cast<double>(pts3d[3 * a + 2]), static_cast<double>(FLT_EPSILON));
      const double dx = px - static_cast<double>(pts3d[3 * a]);
      const double dy = py - static_cast<double>(pts3d[3 * a + 1]);
      const double r = std::max(std::sqrt(dx * dx + dy * dy), 1e-8);
      sum_w_angle_[p] += w * std::atan((pz - za) / r);
      sum_radius_[p] += r;
    }
  }
  ++count_;
}

std::vector<double> CanonicalViewBuilder::mean_points() const {
  std::vector<double> canon(sum_wx_.size(), 0.0);
  for (std::size_t p = 0; p < sum_w_.size(); ++p) {
    for (int c = 0; c < 3; ++c) canon[3 * p + c] = sum_wx_[3 * p + c] / sum_w_[p];
  }
  return canon;
}

Result<CanonicalView> CanonicalViewBuilder::finish() const {
  if (!status_.is_ok()) return status_;
  if (count_ == 0) return invalid_argument("no own-frame prediction was added");
  const int s = subsample_;
  const int half = s / 2;
  const int anchors_x = width_ / s, anchors_y = height_ / s;
  const std::size_t n = sum_w_.size();

  CanonicalView view;
  view.height = height_;
  view.width = width_;
  view.subsample = s;
  view.predictions = count_;
  const std::vector<double> canon = mean_points();
  view.anchor_depth.resize(static_cast<std::size_t>(anchors_x) * anchors_y);
  for (int by = 0; by < anchors_y; ++by) {
    for (int bx = 0; bx < anchors_x; ++bx) {
      const std::size_t a = static_cast<std::size_t>(by * s + half) * width_ + (bx * s + half);
      view.anchor_depth[static_cast<std::size_t>(by) * anchors_x + bx] = canon[3 * a + 2];
    }
  }
  view.canon2.resize(n);
  view.conf.resize(n);
  const double inv_count = 1.0 / count_;
  for (int y = 0; y < height_; ++y) {
    for (int x = 0; x < width_; ++x) {
      const std::size_t p = static_cast<std::size_t>(y) * width_ + x;
      const double anchor_z = view.anchor_depth[static_cast<std::size_t>(y / s) * anchors_x + x / s];
      const double avg_angle = sum_w_angle_[p] / sum_w_[p];
      const double dz = sum_radius_[p] * inv_count * std::tan(avg_angle);
      view.canon2[p] = 1.0 + dz / anchor_z;
      view.conf[p] = sum_w2_[p] / sum_w_[p];
      if (!std::isfinite(view.canon2[p])) {
        return invalid_argument("the mean pointmap has depth " + std::to_string(anchor_z) + " at the anchor of pixel " +
                                pixel_name(p, width_) + ", so its relative depth is undefined");
      }
    }
  }
  view.focal = estimate_focal_weiszfeld(canon, height_, width_, width_ / 2.0, height_ / 2.0);
  return view;
}

Status add_predictions(std::span<CanonicalViewBuilder> builders, std::span<const OwnFrameMaps> predictions,
                       sga::WorkerPool& pool) {
  std::vector<std::vector<std::size_t>> by_image(builders.size());
  for (std::size_t k = 0; k < predictions.size(); ++k) {
    const std::size_t image = predictions[k].image;
    if (image >= builders.size()) {
      return invalid_argument("a prediction of image " + std::to_string(image) + " for " +
                              std::to_string(builders.size()) + " canonical views");
    }
    by_image[image].push_back(k);
  }
  std::vector<std::size_t> images;
  for (std::size_t i = 0; i < by_image.size(); ++i) {
    if (!by_image[i].empty()) images.push_back(i);
  }
  pool.run(static_cast<int>(images.size()), [&](int task) {
    const std::size_t image = images[static_cast<std::size_t>(task)];
    for (const std::size_t k : by_image[image]) builders[image].add(predictions[k].pts3d, predictions[k].conf);
  });
  return Status::ok();
}

Result<std::vector<CanonicalView>> finish_canonical_views(std::span<const CanonicalViewBuilder> builders,
                                                          sga::WorkerPool& pool) {
  std::vector<Result<CanonicalView>> finished(builders.size(), Result<CanonicalView>(internal_error("not run")));
  pool.run(static_cast<int>(builders.size()),
           [&](int i) { finished[static_cast<std::size_t>(i)] = builders[static_cast<std::size_t>(i)].finish(); });
  std::vector<CanonicalView> views;
  views.reserve(builders.size());
  for (std::size_t i = 0; i < finished.size(); ++i) {
    if (!finished[i].is_ok())
      return finished[i].status().with_context("the canonical view of image " + std::to_string(i));
    views.push_back(std::move(finished[i]).value());
  }
  return views;
}

}  // namespace recon::gpu
