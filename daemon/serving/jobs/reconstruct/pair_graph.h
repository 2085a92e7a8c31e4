// PairGraph: which image pairs a reconstruction infers, built the way the official MASt3R-SfM demo
// builds its scene graphs (mast3r/image_pairs.py `make_pairs`, mast3r/retrieval/graph.py
// `make_pairs_fps`; docs/SPARSE_GA_REFERENCE.md §2). The graph is named by a string:
//
//   complete               every pair: N(N-1)/2
//   swin-W[-noncyclic]     each image with the W after it, wrapping around unless noncyclic (W = 3)
//   logwin-W[-noncyclic]   each image with those 1, 2, 4 ... 2^(W-1) before and after it (W = 3)
//   oneref-R               image R with every other
//   retrieval-NA-K         NA key images by farthest-point sampling of the retrieval similarity,
//                          every pair among them, each other image with its most similar key image,
//                          and each image with its K-1 most similar others
//
// Pairs are unordered (first < second), sorted and unique; the job runs both directions of each,
// as the official `symmetric_inference` does. Two departures, both deliberate: an image is never
// paired with itself (the official swin with W >= N adds such pairs), and the farthest-point
// sampling starts at image 0 (the official one starts at a random image), so the same inputs
// always give the same graph. Ties in similarity go to the lower index.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu/status.h"

namespace recon::daemon {

struct PairGraphSpec {
  enum class Kind { kComplete, kSlidingWindow, kLogWindow, kOneReference, kRetrieval };
  Kind kind = Kind::kComplete;
  uint32_t window = 3;      // swin, logwin
  bool cyclic = true;       // swin, logwin
  uint32_t reference = 0;   // oneref
  uint32_t key_images = 0;  // retrieval: NA
  uint32_t neighbours = 0;  // retrieval: K

  std::string to_string() const;  // parses back to the same spec
};

using ImagePairIndex = std::pair<uint32_t, uint32_t>;

// "complete", "swin-5", "logwin-3-noncyclic", "oneref-0", "retrieval-20-10", ... INVALID_ARGUMENT
// naming what is wrong otherwise.
Result<PairGraphSpec> parse_pair_graph(std::string_view text);

// The pairs of `spec` over `images` images. `similarity` (images × images, row-major, higher = more
// alike) is read by kRetrieval only, which needs it. INVALID_ARGUMENT when the graph does not fit
// (fewer than 2 images, a reference or key-image count out of range, a similarity of the wrong size).
Result<std::vector<ImagePairIndex>> make_pair_graph(const PairGraphSpec& spec, uint32_t images,
                                                    std::span<const float> similarity = {});

}  // namespace recon::daemon
