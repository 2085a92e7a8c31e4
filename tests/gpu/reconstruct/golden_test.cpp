// The alignment against the PyTorch reference (tests/reference/sparse_ga_ref.py, golden data made by
// sparse_ga_make_golden.py): canonical views, initial focals, the kinematic tree, every iteration's
// loss of both stages, the coarse and fine cameras, the final anchor depths and the dense output.
// Skips when tests/golden/sparse_ga/case.safetensors is absent (RECON_SPARSE_GA_GOLDEN overrides the
// path).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "gpu/reconstruct/canonical_view.h"
#include "gpu/reconstruct/dense_points.h"
#include "gpu/reconstruct/sparse_alignment.h"
#include "gpu/weights/safetensors.h"

namespace recon::gpu {
namespace {

std::string golden_path() {
  if (const char* env = std::getenv("RECON_SPARSE_GA_GOLDEN")) return env;
  return std::string(RECON_GOLDEN_DIR) + "/sparse_ga/case.safetensors";
}

// The safetensors reader converts floats only; F64 and I32 tensors are read from their bytes.
template <typename T>
std::vector<T> read_raw(const SafetensorsFile& file, const std::string& name, Dtype dtype) {
  const TensorInfo* info = file.find(name);
  if (info == nullptr) {
    ADD_FAILURE() << "missing tensor " << name;
    return {};
  }
  EXPECT_EQ(info->dtype, dtype) << name;
  const std::span<const std::byte> bytes = file.data(*info);
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

std::vector<double> f64(const SafetensorsFile& f, const std::string& name) {
  return read_raw<double>(f, name, Dtype::kF64);
}
std::vector<std::int32_t> i32(const SafetensorsFile& f, const std::string& name) {
  return read_raw<std::int32_t>(f, name, Dtype::kI32);
}

double metadata_number(const SafetensorsFile& f, const std::string& key) {
  const auto v = f.metadata(key);
  EXPECT_TRUE(v.has_value()) << "metadata " << key;
  return v ? std::stod(std::string(*v)) : 0.0;
}

// Largest |got - want| / max(1, |want|), and where.
struct Worst {
  double err = 0;
  std::size_t at = 0;
};
template <typename A, typename B>
Worst worst_error(const A& got, const B& want) {
  Worst w;
  EXPECT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < std::min(got.size(), want.size()); ++k) {
    const double e = std::abs(static_cast<double>(got[k]) - static_cast<double>(want[k])) /
                     std::max(1.0, std::abs(static_cast<double>(want[k])));
    if (!(e <= w.err)) w = {e, k};  // NaN counts as the worst
  }
  return w;
}

void expect_losses(const std::vector<double>& got, const std::vector<double>& want, const char* stage) {
  ASSERT_EQ(got.size(), want.size()) << stage;
  double worst_early = 0, worst_late = 0;
  for (std::size_t k = 0; k < want.size(); ++k) {
    const double e = std::abs(got[k] - want[k]) / std::abs(want[k]);
    (k < 20 ? worst_early : worst_late) = std::max(k < 20 ? worst_early : worst_late, e);
  }
  std::printf("%s loss: worst relative difference %.2e (first 20 iterations), %.2e (after)\n", stage, worst_early,
              worst_late);
  for (std::size_t k = 0; k < want.size(); ++k) {
    const double tol = (k < 20 ? 1e-6 : 1e-4) * std::abs(want[k]);
    EXPECT_NEAR(got[k], want[k], tol) << stage << " iteration " << k;
  }
}

TEST(SparseAlignmentGolden, MatchesThePyTorchReference) {
  const std::string path = golden_path();
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << path << " is absent: run tests/reference/sparse_ga_make_golden.py to make it";
  }
  auto opened = SafetensorsFile::open(path);
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  const SafetensorsFile& file = *opened;
  AlignmentOptions options;
  options.subsample = static_cast<int>(metadata_number(file, "subsample"));
  options.lr1 = metadata_number(file, "lr1");
  options.niter1 = static_cast<int>(metadata_number(file, "niter1"));
  options.lr2 = metadata_number(file, "lr2");
  options.niter2 = static_cast<int>(metadata_number(file, "niter2"));
  const int s = options.subsample;

  const std::vector<std::int32_t> hw = i32(file, "image_hw");
  const int n = static_cast<int>(hw.size() / 2);
  ASSERT_GE(n, 2);

  // Canonical views from the streamed own-frame predictions.
  std::vector<CanonicalView> views;
  const std::vector<double> focal0 = f64(file, "focal0");
  for (int i = 0; i < n; ++i) {
    const int h = hw[2 * static_cast<std::size_t>(i)], w = hw[2 * static_cast<std::size_t>(i) + 1];
    CanonicalViewBuilder builder(h, w, s);
    for (int k = 0; file.find("own." + std::to_string(i) + "." + std::to_string(k) + ".pts3d"); ++k) {
      const std::string prefix = "own." + std::to_string(i) + "." + std::to_string(k);
      builder.add(f64(file, prefix + ".pts3d"), f64(file, prefix + ".conf"));
    }
    auto view = builder.finish();
    ASSERT_TRUE(view.is_ok()) << "image " << i << ": " << view.status().to_string();
    const std::string c = "canon." + std::to_string(i);
    const Worst canon2 = worst_error(view->canon2, f64(file, c + ".canon2"));
    const Worst conf = worst_error(view->conf, f64(file, c + ".conf"));
    const Worst anchors = worst_error(view->anchor_depth, f64(file, c + ".anchor_depth"));
    EXPECT_LT(canon2.err, 1e-5) << c << ".canon2 at " << canon2.at;
    EXPECT_LT(conf.err, 1e-5) << c << ".conf at " << conf.at;
    EXPECT_LT(anchors.err, 1e-5) << c << ".anchor_depth at " << anchors.at;
    EXPECT_NEAR(view->focal, focal0[static_cast<std::size_t>(i)], 1e-6 * focal0[static_cast<std::size_t>(i)])
        << "focal0 of image " << i;
    views.push_back(std::move(view).value());
  }

  const std::vector<std::int32_t> pair_ids = i32(file, "pairs");
  std::vector<PairMatches> pairs;
  for (std::size_t p = 0; p < pair_ids.size() / 2; ++p) {
    const std::string m = "match." + std::to_string(p);
    PairMatches pm;
    pm.image_a = pair_ids[2 * p];
    pm.image_b = pair_ids[2 * p + 1];
    pm.xy_a = i32(file, m + ".xy_a");
    pm.xy_b = i32(file, m + ".xy_b");
    const std::vector<double> conf = f64(file, m + ".conf");
    pm.conf.assign(conf.begin(), conf.end());
    pairs.push_back(std::move(pm));
  }

  // The coarse stage alone gives the coarse cameras; the full run gives the rest.
  AlignmentOptions coarse_only = options;
  coarse_only.level = AlignmentOptions::Level::kCoarse;
  auto coarse = align_scene(views, pairs, coarse_only);
  ASSERT_TRUE(coarse.is_ok()) << coarse.status().to_string();
  auto fine = align_scene(views, pairs, options);
  ASSERT_TRUE(fine.is_ok()) << fine.status().to_string();
  ASSERT_EQ(fine->components.size(), 1u) << "the golden scene is connected";

  const std::vector<std::int32_t> root = i32(file, "tree.root");
  const std::vector<std::int32_t> edges = i32(file, "tree.edges");
  const KinematicTree& tree = fine->components[0].tree;
  ASSERT_EQ(root.size(), 1u);
  EXPECT_EQ(tree.root, root[0]);
  std::vector<std::int32_t> got_edges;
  for (const auto& [p, c] : tree.edges) got_edges.insert(got_edges.end(), {p, c});
  EXPECT_EQ(got_edges, edges);

  expect_losses(fine->coarse_loss, f64(file, "coarse.loss"), "coarse");
  expect_losses(fine->fine_loss, f64(file, "fine.loss"), "fine");

  const std::vector<double> coarse_cam2w = f64(file, "coarse.cam2w");
  const std::vector<double> fine_cam2w = f64(file, "fine.cam2w");
  const std::vector<double> fine_k = f64(file, "fine.K");
  for (int i = 0; i < n; ++i) {
    const auto at = static_cast<std::size_t>(i);
    const auto first = static_cast<std::ptrdiff_t>(16 * at), last = first + 16;
    const std::vector<double> want_coarse(coarse_cam2w.begin() + first, coarse_cam2w.begin() + last);
    const std::vector<double> want_fine(fine_cam2w.begin() + first, fine_cam2w.begin() + last);
    EXPECT_LT(worst_error(coarse->cameras[at].cam_to_world, want_coarse).err, 1e-4) << "coarse cam2w " << i;
    EXPECT_LT(worst_error(fine->cameras[at].cam_to_world, want_fine).err, 1e-4) << "fine cam2w " << i;
    const double* k = &fine_k[9 * at];
    EXPECT_NEAR(fine->cameras[at].focal, k[0], 1e-4 * k[0]) << "focal " << i;
    EXPECT_NEAR(fine->cameras[at].cx, k[2], 1e-4 * k[0]) << "cx " << i;
    EXPECT_NEAR(fine->cameras[at].cy, k[5], 1e-4 * k[0]) << "cy " << i;
    const Worst depth = worst_error(fine->anchor_depth[at], f64(file, "fine.anchor_depth." + std::to_string(i)));
    EXPECT_LT(depth.err, 1e-4) << "fine.anchor_depth." << i << " at " << depth.at;
  }

  const std::vector<DenseImage> dense = dense_points(*fine, views, /*clean=*/true);
  ASSERT_EQ(dense.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto at = static_cast<std::size_t>(i);
    const Worst pts = worst_error(dense[at].points, f64(file, "dense." + std::to_string(i) + ".pts3d"));
    EXPECT_LT(pts.err, 1e-4) << "dense." << i << ".pts3d at " << pts.at;
    const std::vector<double> want_conf = f64(file, "dense." + std::to_string(i) + ".conf");
    const Worst conf = worst_error(dense[at].conf, want_conf);
    EXPECT_LT(conf.err, 1e-5) << "dense." << i << ".conf at " << conf.at << " (cleaning decided differently?)";
  }
}

}  // namespace
}  // namespace recon::gpu
