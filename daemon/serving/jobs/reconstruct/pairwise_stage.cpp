// The pairwise stage: see pairwise_stage.h.
#include "daemon/serving/jobs/reconstruct/pairwise_stage.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <utility>

#include "daemon/serving/match/match_instance.h"
#include "gpu/one_shot.h"
#include "gpu/tensor_copies.h"

namespace recon::daemon {
namespace {

// One direction of one descriptor pair: seeds on `a`'s grid, walking to mutual nearest neighbours
// in `b` (match_options with the job's border).
Result<IndexMatches> match_one(MatchInstance& matcher, gpu::Runtime& rt, gpu::Queue& queue, gpu::OneShot& copies,
                               const gpu::Tensor& desc_a, const gpu::Tensor& desc_b, const gpu::Tensor& conf_a,
                               const gpu::Tensor& conf_b, int subsample, bool fp16_descriptors) {
  gpu::MatchMaps maps;
  maps.conf_a = conf_a;
  maps.conf_b = conf_b;
  const gpu::FastMatchOptions options = match_options(subsample, kJobMatchBorder, fp16_descriptors);
  RECON_ASSIGN_OR_RETURN(const gpu::MatchShape shape, gpu::MatchShape::of(desc_a, desc_b, maps));
  RECON_ASSIGN_OR_RETURN(gpu::FastMatcher * fast, matcher.matchers().get(shape, options));
  RECON_ASSIGN_OR_RETURN(const gpu::MatchResult result, fast->run(desc_a, desc_b, maps, &queue));
  // Only the rows the merge reads (MatchResult::to_host would download all ten tensors).
  int32_t n = 0;
  const gpu::TensorCopy count{&result.count, reinterpret_cast<uint8_t*>(&n)};
  RECON_RETURN_IF_ERROR(gpu::copy_tensors_to_host(rt, copies, std::span(&count, 1)));
  if (n < 0 || n > result.capacity) {
    return internal_error("match count " + std::to_string(n) + " outside 0.." + std::to_string(result.capacity));
  }
  IndexMatches m;
  if (n == 0) return m;
  m.idx_a.resize(static_cast<size_t>(n));
  m.idx_b.resize(static_cast<size_t>(n));
  m.conf.resize(static_cast<size_t>(n));
  RECON_ASSIGN_OR_RETURN(const gpu::Tensor idx_a, result.idx_a.slice_rows(0, n));
  RECON_ASSIGN_OR_RETURN(const gpu::Tensor idx_b, result.idx_b.slice_rows(0, n));
  RECON_ASSIGN_OR_RETURN(const gpu::Tensor conf, result.conf.slice_rows(0, n));
  const gpu::TensorCopy rows[] = {{&idx_a, reinterpret_cast<uint8_t*>(m.idx_a.data())},
                                  {&idx_b, reinterpret_cast<uint8_t*>(m.idx_b.data())},
                                  {&conf, reinterpret_cast<uint8_t*>(m.conf.data())}};
  RECON_RETURN_IF_ERROR(gpu::copy_tensors_to_host(rt, copies, rows));
  return m;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

IndexMatches swapped(IndexMatches m) {
  std::swap(m.idx_a, m.idx_b);
  return m;
}

// Sized for `pts3d` and `conf`, and their copy into it listed in `copies`.
OwnFramePrediction own_frame(uint32_t image, const gpu::Tensor& pts3d, const gpu::Tensor& conf,
                             std::vector<gpu::TensorCopy>& copies) {
  OwnFramePrediction own;
  own.image = image;
  own.pts3d.resize(static_cast<size_t>(pts3d.numel()));
  own.conf.resize(static_cast<size_t>(conf.numel()));
  copies.push_back({&pts3d, reinterpret_cast<uint8_t*>(own.pts3d.data())});
  copies.push_back({&conf, reinterpret_cast<uint8_t*>(own.conf.data())});
  return own;
}

}  // namespace

gpu::PairMatches merge_matches(std::span<const IndexMatches> runs, int image_a, int image_b, int width_a, int width_b) {
  struct Row {
    int64_t key;
    size_t order;
    float conf;
    int32_t a, b;
  };
  std::vector<Row> rows;
  for (const IndexMatches& run : runs) {
    for (size_t i = 0; i < run.idx_a.size(); ++i) {
      const int64_t key = (int64_t{run.idx_a[i]} << 32) | static_cast<uint32_t>(run.idx_b[i]);
      rows.push_back(Row{key, rows.size(), run.conf.empty() ? 1.0f : run.conf[i], run.idx_a[i], run.idx_b[i]});
    }
  }
  // Sorted by key, then by order of appearance: the first row of each key is its first occurrence.
  std::sort(rows.begin(), rows.end(),
            [](const Row& x, const Row& y) { return x.key != y.key ? x.key < y.key : x.order < y.order; });
  gpu::PairMatches out;
  out.image_a = image_a;
  out.image_b = image_b;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i > 0 && rows[i].key == rows[i - 1].key) continue;
    out.xy_a.push_back(rows[i].a % width_a);
    out.xy_a.push_back(rows[i].a / width_a);
    out.xy_b.push_back(rows[i].b % width_b);
    out.xy_b.push_back(rows[i].b / width_b);
    out.conf.push_back(rows[i].conf);
  }
  return out;
}

Result<PairwiseNetwork> run_pair_network(gpu::Mast3rEngine& engine, const gpu::EncodedImages& images,
                                         std::span<const ImagePairIndex> pairs, PairwiseTimes& times) {
  // (a, b) for every pair, then (b, a): two passes of the decoder over the same encodings. Each
  // image's points come from the direction where it is view 1, so view 2's DPT head does not run.
  PairwiseNetwork network;
  network.pairs.assign(pairs.begin(), pairs.end());
  network.fp16_descriptors = engine.weights().head_dtype() == gpu::DType::kF16;
  std::vector<gpu::ImagePair> directed;
  for (const auto& [a, b] : pairs) directed.push_back({static_cast<int32_t>(a), static_cast<int32_t>(b)});
  for (const auto& [a, b] : pairs) directed.push_back({static_cast<int32_t>(b), static_cast<int32_t>(a)});
  const auto start = std::chrono::steady_clock::now();
  RECON_ASSIGN_OR_RETURN(network.results, engine.infer_encoded(images, directed, {.view2_points = false}));
  times.network_ms += ms_since(start);
  return network;
}

Result<std::vector<PairwiseOutput>> match_pair_network(const PairwiseNetwork& network, MatchInstance& matcher,
                                                       gpu::Runtime& rt, gpu::Queue& queue,
                                                       std::span<const int> image_widths, int subsample,
                                                       PairwiseTimes& times) {
  const std::span<const ImagePairIndex> pairs = network.pairs;
  const std::vector<gpu::Mast3rResult>& results = network.results;
  if (results.size() != 2 * pairs.size()) {
    return internal_error(std::to_string(results.size()) + " network results for " + std::to_string(pairs.size()) +
                          " pairs");
  }
  RECON_ASSIGN_OR_RETURN(const std::unique_ptr<gpu::OneShot> copies,
                         gpu::OneShot::create(rt.context().device(), queue));
  // Every pair's own-frame predictions, in as few submissions as the staging chunks allow.
  auto start = std::chrono::steady_clock::now();
  std::vector<PairwiseOutput> outputs(pairs.size());
  std::vector<gpu::TensorCopy> own_copies;
  for (size_t k = 0; k < pairs.size(); ++k) {
    const auto [a, b] = pairs[k];
    const gpu::Mast3rOutputs& ab = results[k].tensors;
    const gpu::Mast3rOutputs& ba = results[pairs.size() + k].tensors;
    outputs[k].own[0] = own_frame(a, ab.pts3d[0], ab.conf[0], own_copies);
    outputs[k].own[1] = own_frame(b, ba.pts3d[0], ba.conf[0], own_copies);
  }
  RECON_RETURN_IF_ERROR(gpu::copy_tensors_to_host(rt, *copies, own_copies));
  times.copies_ms += ms_since(start);

  for (size_t k = 0; k < pairs.size(); ++k) {
    const auto [a, b] = pairs[k];
    const gpu::Mast3rOutputs& ab = results[k].tensors;                 // view 1 = a, view 2 = b, frame of a
    const gpu::Mast3rOutputs& ba = results[pairs.size() + k].tensors;  // view 1 = b, view 2 = a, frame of b
    // The official order: (desc11, desc21) both ways, then (desc12, desc22) both ways; 1 = a, 2 = b.
    start = std::chrono::steady_clock::now();
    const auto match = [&](const gpu::Mast3rOutputs& o, int x, int y) {
      return match_one(matcher, rt, queue, *copies, o.desc[x], o.desc[y], o.desc_conf[x], o.desc_conf[y], subsample,
                       network.fp16_descriptors);
    };
    std::array<IndexMatches, 4> runs;
    RECON_ASSIGN_OR_RETURN(runs[0], match(ab, 0, 1));
    RECON_ASSIGN_OR_RETURN(IndexMatches back, match(ab, 1, 0));
    runs[1] = swapped(std::move(back));
    RECON_ASSIGN_OR_RETURN(runs[2], match(ba, 1, 0));
    RECON_ASSIGN_OR_RETURN(back, match(ba, 0, 1));
    runs[3] = swapped(std::move(back));

    outputs[k].matches =
        merge_matches(runs, static_cast<int>(a), static_cast<int>(b), image_widths[a], image_widths[b]);
    times.matching_ms += ms_since(start);
  }
  return outputs;
}

}  // namespace recon::daemon
