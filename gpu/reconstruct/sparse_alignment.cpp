// align_scene: input validation, the connected components of the match graph, their kinematic trees,
// and the two stages over every component. See sparse_alignment.h.
#include "gpu/reconstruct/sparse_alignment.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <utility>

#include "gpu/reconstruct/alignment_problem.h"
#include "gpu/reconstruct/worker_pool.h"

namespace recon::gpu {

namespace {

using sga::ComponentAligner;
using sga::ComponentInput;
using sga::ImageConstants;
using sga::PairSoA;
using sga::Stage;

std::size_t idx(int i) {
  return static_cast<std::size_t>(i);
}

std::string image_name(int i) {
  return "image " + std::to_string(i);
}

std::string pair_name(std::size_t p, const PairMatches& pair) {
  return "pair " + std::to_string(p) + " (" + std::to_string(pair.image_a) + ", " + std::to_string(pair.image_b) + ")";
}

Status validate_options(const AlignmentOptions& o) {
  if (o.subsample <= 0) return invalid_argument("subsample " + std::to_string(o.subsample) + " must be positive");
  if (o.niter1 < 0 || o.niter2 < 0) return invalid_argument("iteration counts must not be negative");
  if (!std::isfinite(o.lr1) || !std::isfinite(o.lr2) || o.lr1 < 0 || o.lr2 < 0) {
    return invalid_argument("learning rates must be finite and not negative");
  }
  if (!std::isfinite(o.matching_conf_thr)) return invalid_argument("matching_conf_thr must be finite");
  return Status::ok();
}

Status validate_view(const CanonicalView& v, int subsample) {
  if (v.height <= 0 || v.width <= 0) {
    return invalid_argument("size " + std::to_string(v.height) + "x" + std::to_string(v.width));
  }
  if (v.subsample != subsample) {
    return invalid_argument("subsample " + std::to_string(v.subsample) + " but the alignment uses " +
                            std::to_string(subsample));
  }
  if (v.height % subsample != 0 || v.width % subsample != 0) {
    return invalid_argument("size " + std::to_string(v.height) + "x" + std::to_string(v.width) +
                            " is not a multiple of subsample " + std::to_string(subsample));
  }
  const std::size_t n = idx(v.height) * idx(v.width);
  if (v.canon2.size() != n || v.conf.size() != n || v.anchor_depth.size() != idx(v.anchors_x() * v.anchors_y())) {
    return invalid_argument("array sizes do not match its " + std::to_string(v.height) + "x" + std::to_string(v.width) +
                            " size");
  }
  if (!std::isfinite(v.focal) || v.focal <= 0) return invalid_argument("focal " + std::to_string(v.focal));
  for (std::size_t p = 0; p < n; ++p) {
    if (!std::isfinite(v.canon2[p]) || !std::isfinite(v.conf[p])) {
      return invalid_argument("non-finite relative depth or confidence at pixel " + std::to_string(p));
    }
  }
  for (const double d : v.anchor_depth) {
    if (!std::isfinite(d)) return invalid_argument("non-finite anchor depth");
  }
  // The official asserts canon2 > 0 at the anchors (its anchor_depth_offsets divides by it).
  const int s = subsample;
  for (int by = 0; by < v.anchors_y(); ++by) {
    for (int bx = 0; bx < v.anchors_x(); ++bx) {
      if (!(v.canon2[idx(by * s + s / 2) * idx(v.width) + idx(bx * s + s / 2)] > 0)) {
        return invalid_argument("relative depth at anchor (" + std::to_string(bx) + ", " + std::to_string(by) +
                                ") is not positive");
      }
    }
  }
  return Status::ok();
}

Status validate_pair(std::size_t p, const PairMatches& pair, std::span<const CanonicalView> views) {
  const int n = static_cast<int>(views.size());
  if (pair.image_a < 0 || pair.image_a >= n || pair.image_b < 0 || pair.image_b >= n) {
    return invalid_argument(pair_name(p, pair) + " names an image outside 0.." + std::to_string(n - 1));
  }
  if (pair.image_a == pair.image_b) return invalid_argument(pair_name(p, pair) + " pairs an image with itself");
  const std::size_t m = pair.conf.size();
  if (pair.xy_a.size() != 2 * m || pair.xy_b.size() != 2 * m) {
    return invalid_argument(pair_name(p, pair) + ": " + std::to_string(pair.xy_a.size()) + " and " +
                            std::to_string(pair.xy_b.size()) + " coordinates for " + std::to_string(m) + " matches");
  }
  for (int side = 0; side < 2; ++side) {
    const CanonicalView& v = views[idx(side == 0 ? pair.image_a : pair.image_b)];
    const std::vector<std::int32_t>& xy = side == 0 ? pair.xy_a : pair.xy_b;
    for (std::size_t k = 0; k < m; ++k) {
      const std::int32_t x = xy[2 * k], y = xy[2 * k + 1];
      if (x < 0 || y < 0 || x >= v.width || y >= v.height) {
        return invalid_argument(pair_name(p, pair) + ": match " + std::to_string(k) + " at (" + std::to_string(x) +
                                ", " + std::to_string(y) + ") is outside its " + std::to_string(v.width) + "x" +
                                std::to_string(v.height) + " image");
      }
    }
  }
  for (std::size_t k = 0; k < m; ++k) {
    if (!std::isfinite(pair.conf[k]) || pair.conf[k] < 0) {
      return invalid_argument(pair_name(p, pair) + ": match " + std::to_string(k) + " has confidence " +
                              std::to_string(pair.conf[k]));
    }
  }
  return Status::ok();
}

// torch.median: the lower median.
double lower_median(std::vector<double> values) {
  const std::size_t k = (values.size() - 1) / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

ImageConstants image_constants(const CanonicalView& v) {
  ImageConstants im;
  im.width = v.width;
  im.height = v.height;
  im.anchors_x = v.anchors_x();
  im.anchors_y = v.anchors_y();
  im.base_focal = v.focal;
  im.median_depth = lower_median(v.anchor_depth);
  const double diagonal = std::sqrt(static_cast<double>(v.width) * v.width + static_cast<double>(v.height) * v.height);
  im.min_focal = 0.25 * diagonal;
  im.max_focal = 10.0 * diagonal;
  return im;
}

// One side of a pair's matches: pixels, anchors (block quantisation) and offsets canon2[p]/canon2[a] - 1.
void fill_side(const CanonicalView& v, const std::vector<std::int32_t>& xy, std::vector<double>& xs,
               std::vector<double>& ys, std::vector<std::int32_t>& anchors, std::vector<double>& offsets) {
  const int s = v.subsample;
  const std::size_t m = xy.size() / 2;
  xs.resize(m);
  ys.resize(m);
  anchors.resize(m);
  offsets.resize(m);
  for (std::size_t k = 0; k < m; ++k) {
    const int x = xy[2 * k], y = xy[2 * k + 1];
    const int bx = x / s, by = y / s;
    xs[k] = x;
    ys[k] = y;
    anchors[k] = by * v.anchors_x() + bx;
    const double anchor_canon2 = v.canon2[idx(by * s + s / 2) * idx(v.width) + idx(bx * s + s / 2)];
    offsets[k] = v.canon2[idx(y) * idx(v.width) + idx(x)] / anchor_canon2 - 1.0;
  }
}

struct Component {
  std::vector<int> images;  // ascending
  std::vector<int> pairs;   // indices into the input pairs, ascending
};

std::vector<Component> connected_components(int n, std::span<const PairMatches> pairs, const std::vector<int>& kept) {
  std::vector<int> parent(idx(n));
  std::iota(parent.begin(), parent.end(), 0);
  const auto find = [&](int v) {
    while (parent[idx(v)] != v) v = parent[idx(v)] = parent[idx(parent[idx(v)])];
    return v;
  };
  for (const int p : kept) {
    const int a = find(pairs[idx(p)].image_a), b = find(pairs[idx(p)].image_b);
    if (a != b) parent[idx(std::max(a, b))] = std::min(a, b);
  }
  std::map<int, Component> by_root;
  for (int i = 0; i < n; ++i) by_root[find(i)].images.push_back(i);
  for (const int p : kept) by_root[find(pairs[idx(p)].image_a)].pairs.push_back(p);
  std::vector<Component> out;
  out.reserve(by_root.size());
  for (auto& [root, c] : by_root) out.push_back(std::move(c));
  // Largest first; equal sizes by their first image.
  std::stable_sort(out.begin(), out.end(),
                   [](const Component& l, const Component& r) { return l.images.size() > r.images.size(); });
  return out;
}

Result<KinematicTree> component_tree(const Component& c, std::span<const PairMatches> pairs,
                                     std::span<const CanonicalView> views, const std::vector<int>& local,
                                     const AlignmentOptions& options) {
  const int n = static_cast<int>(c.images.size());
  std::vector<double> n_matches(idx(n) * idx(n), 0.0);
  for (const int p : c.pairs) {
    const int a = local[idx(pairs[idx(p)].image_a)], b = local[idx(pairs[idx(p)].image_b)];
    const auto count = static_cast<double>(pairs[idx(p)].conf.size());
    n_matches[idx(a) * idx(n) + idx(b)] = n_matches[idx(b) * idx(n) + idx(a)] = count;
  }
  KinematicTree tree;
  if (options.tree == AlignmentOptions::Tree::kMst) {
    RECON_ASSIGN_OR_RETURN(tree, mst_tree(n_matches, n));
  } else {
    std::vector<std::int64_t> patches;
    for (const int i : c.images) {
      const CanonicalView& v = views[idx(i)];
      patches.push_back(static_cast<std::int64_t>(v.width / options.subsample) * (v.height / options.subsample));
    }
    RECON_ASSIGN_OR_RETURN(tree, hclust_ward_tree(n_matches, patches, n));
  }
  if (static_cast<int>(tree.edges.size()) != n - 1) return internal_error("the kinematic tree does not span");
  return tree;
}

KinematicTree to_global(const KinematicTree& t, const std::vector<int>& images) {
  KinematicTree g;
  g.root = images[idx(t.root)];
  for (const auto& [p, c] : t.edges) g.edges.emplace_back(images[idx(p)], images[idx(c)]);
  return g;
}

}  // namespace

namespace sga {

Result<ComponentInput> component_input(std::span<const CanonicalView> views, std::span<const PairMatches> pairs,
                                       std::span<const int> images, std::span<const int> pair_indices,
                                       const AlignmentOptions& options) {
  const int n = static_cast<int>(views.size());
  std::vector<int> local(idx(n), -1);
  for (std::size_t j = 0; j < images.size(); ++j) local[idx(images[j])] = static_cast<int>(j);

  ComponentInput input;
  input.shared_intrinsics = options.shared_intrinsics;
  for (const int i : images) {
    const CanonicalView& v = views[idx(i)];
    input.images.push_back(image_constants(v));
    if (!(input.images.back().median_depth > 0)) {
      return invalid_argument(image_name(i) + ": the median depth of its anchors is " +
                              std::to_string(input.images.back().median_depth) +
                              "; the points must lie in front of the camera");
    }
    input.anchor_depths.push_back(v.anchor_depth);
    double conf_sum = 0.0;
    for (const double cf : v.conf) conf_sum += cf;
    input.mean_conf.push_back(conf_sum / static_cast<double>(v.conf.size()));
  }
  for (const int p : pair_indices) {
    const PairMatches& pair = pairs[idx(p)];
    PairSoA soa;
    soa.image_a = local[idx(pair.image_a)];
    soa.image_b = local[idx(pair.image_b)];
    fill_side(views[idx(pair.image_a)], pair.xy_a, soa.xa, soa.ya, soa.anchor_a, soa.offa);
    fill_side(views[idx(pair.image_b)], pair.xy_b, soa.xb, soa.yb, soa.anchor_b, soa.offb);
    soa.conf.assign(pair.conf.begin(), pair.conf.end());
    input.pairs.push_back(std::move(soa));
  }
  const Component c{std::vector<int>(images.begin(), images.end()),
                    std::vector<int>(pair_indices.begin(), pair_indices.end())};
  RECON_ASSIGN_OR_RETURN(input.tree, component_tree(c, pairs, views, local, options));
  return input;
}

}  // namespace sga

Result<SceneAlignment> align_scene(std::span<const CanonicalView> views, std::span<const PairMatches> pairs,
                                   const AlignmentOptions& options, const AlignmentProgress& progress) {
  RECON_RETURN_IF_ERROR(validate_options(options));
  const int n = static_cast<int>(views.size());
  if (n < 2) return invalid_argument("the alignment needs at least 2 images, got " + std::to_string(n));
  for (int i = 0; i < n; ++i) {
    RECON_RETURN_IF_ERROR(validate_view(views[idx(i)], options.subsample).with_context(image_name(i)));
  }
  std::map<std::pair<int, int>, std::size_t> seen;
  std::vector<int> kept;
  SceneAlignment out;
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    RECON_RETURN_IF_ERROR(validate_pair(p, pairs[p], views));
    const auto key = std::minmax(pairs[p].image_a, pairs[p].image_b);
    if (const auto [it, fresh] = seen.emplace(key, p); !fresh) {
      return invalid_argument(pair_name(p, pairs[p]) + " repeats pair " + std::to_string(it->second) +
                              "; give each unordered pair once");
    }
    const bool matched = !pairs[p].conf.empty() &&
                         *std::max_element(pairs[p].conf.begin(), pairs[p].conf.end()) > options.matching_conf_thr;
    if (matched) {
      kept.push_back(static_cast<int>(p));
    } else {
      out.skipped_pairs.push_back(static_cast<int>(p));
    }
  }

  const std::vector<Component> components = connected_components(n, pairs, kept);
  out.cameras.resize(idx(n));
  out.anchor_depth.resize(idx(n));
  out.component.assign(idx(n), -1);

  // Build every component's problem first, so that bad inputs fail before any optimisation.
  sga::WorkerPool pool(options.threads);
  std::vector<std::unique_ptr<ComponentAligner>> aligners;
  std::vector<int> aligned;  // component ids with an aligner, in order
  for (std::size_t k = 0; k < components.size(); ++k) {
    const Component& c = components[k];
    ComponentAlignment info;
    info.images = c.images;
    for (const int i : c.images) out.component[idx(i)] = static_cast<int>(k);
    if (c.images.size() < 2) {
      const int i = c.images[0];
      const CanonicalView& v = views[idx(i)];
      info.tree.root = i;
      AlignedCamera& cam = out.cameras[idx(i)];
      cam.cam_to_world = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
      cam.focal = v.focal;
      cam.cx = v.width / 2.0;
      cam.cy = v.height / 2.0;
      cam.width = v.width;
      cam.height = v.height;
      out.anchor_depth[idx(i)] = v.anchor_depth;
      out.components.push_back(std::move(info));
      continue;
    }
    RECON_ASSIGN_OR_RETURN(ComponentInput input, sga::component_input(views, pairs, c.images, c.pairs, options));
    for (const PairSoA& soa : input.pairs) info.matches += soa.size();
    info.pairs = static_cast<int>(c.pairs.size());
    info.tree = to_global(input.tree, c.images);
    aligners.push_back(std::make_unique<ComponentAligner>(std::move(input), pool));
    aligned.push_back(static_cast<int>(k));
    out.components.push_back(std::move(info));
  }

  // Stage 1 for every component, then stage 2, so that progress runs once through each stage.
  const bool fine = options.level != AlignmentOptions::Level::kCoarse && options.niter2 > 0;
  const bool opt_depth = options.level == AlignmentOptions::Level::kRefineDepth;
  const int num_aligned = static_cast<int>(aligners.size());
  for (const Stage stage : {Stage::kCoarse, Stage::kFine}) {
    if (stage == Stage::kFine && !fine) break;
    const bool coarse = stage == Stage::kCoarse;
    const int niter = coarse ? options.niter1 : options.niter2;
    const char* name = coarse ? "align-coarse" : "align-fine";
    for (int a = 0; a < num_aligned; ++a) {
      ComponentAlignment& info = out.components[idx(aligned[idx(a)])];
      const auto on_iteration = [&](int it, double loss) {
        return !progress || progress(name, a * niter + it + 1, num_aligned * niter, loss);
      };
      ComponentAligner::StageOutcome r =
          aligners[idx(a)]->run_stage(stage, coarse ? options.lr1 : options.lr2, niter, opt_depth, on_iteration);
      if (r.cancelled) return cancelled(std::string("cancelled during ") + name);
      if (r.stopped_on_nan) {
        info.warnings.push_back(std::string(name) + " stopped at iteration " + std::to_string(r.losses.size()) +
                                " of " + std::to_string(niter) + ": the loss is NaN");
      }
      (coarse ? info.coarse_loss : info.fine_loss) = std::move(r.losses);
    }
  }

  double error_sum = 0.0, weight_sum = 0.0;
  for (int a = 0; a < num_aligned; ++a) {
    ComponentAligner& aligner = *aligners[idx(a)];
    ComponentAlignment& info = out.components[idx(aligned[idx(a)])];
    const sga::SceneState& state = aligner.state();
    for (std::size_t j = 0; j < info.images.size(); ++j) {
      const int i = info.images[j];
      const sga::CameraState& c = state.cameras[j];
      AlignedCamera& cam = out.cameras[idx(i)];
      cam.cam_to_world = sga::cam_to_world_matrix(c);
      cam.focal = c.focal;
      cam.cx = c.cx;
      cam.cy = c.cy;
      cam.width = views[idx(i)].width;
      cam.height = views[idx(i)].height;
      out.anchor_depth[idx(i)] = state.depth[j];
    }
    info.reprojection_px = aligner.reprojection_error();
    error_sum += info.reprojection_px * aligner.matches().conf_sum;
    weight_sum += aligner.matches().conf_sum;
  }
  out.fine_reprojection_px = weight_sum > 0 ? error_sum / weight_sum : 0.0;
  if (!out.components.empty()) {
    out.coarse_loss = out.components[0].coarse_loss;
    out.fine_loss = out.components[0].fine_loss;
  }
  return out;
}

}  // namespace recon::gpu
