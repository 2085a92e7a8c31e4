// PairGraph: see pair_graph.h.
#include "daemon/serving/jobs/reconstruct/pair_graph.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

#include "daemon/service/config_values.h"

namespace recon::daemon {
namespace {

using Kind = PairGraphSpec::Kind;

// The '-'-separated fields of `text`.
std::vector<std::string_view> fields(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t dash = text.find('-', start);
    out.push_back(text.substr(start, dash == std::string_view::npos ? std::string_view::npos : dash - start));
    if (dash == std::string_view::npos) return out;
    start = dash + 1;
  }
}

Result<uint32_t> number(std::string_view field, std::string_view what, uint32_t min) {
  auto value = parse_uint(field, min, std::numeric_limits<uint32_t>::max());
  if (!value.is_ok()) return value.status().with_context("pair graph: " + std::string(what));
  return static_cast<uint32_t>(*value);
}

class PairSet {
 public:
  void add(uint32_t a, uint32_t b) {
    if (a != b) pairs_.insert({std::min(a, b), std::max(a, b)});
  }
  std::vector<ImagePairIndex> sorted() const { return {pairs_.begin(), pairs_.end()}; }

 private:
  std::set<ImagePairIndex> pairs_;
};

// Image j's distance to image i: 1 - similarity.
float distance(std::span<const float> similarity, uint32_t n, uint32_t i, uint32_t j) {
  return 1.0f - similarity[static_cast<size_t>(i) * n + j];
}

void add_retrieval(const PairGraphSpec& spec, uint32_t n, std::span<const float> similarity, PairSet& pairs) {
  // Farthest-point sampling: each next key image is the one farthest from every key chosen so far.
  std::vector<uint32_t> keys{0};
  std::vector<float> to_keys(n);
  for (uint32_t j = 0; j < n; ++j) to_keys[j] = distance(similarity, n, 0, j);
  while (keys.size() < spec.key_images) {
    uint32_t farthest = 0;
    float best = -std::numeric_limits<float>::infinity();
    for (uint32_t j = 0; j < n; ++j) {
      const bool is_key = std::find(keys.begin(), keys.end(), j) != keys.end();
      if (!is_key && to_keys[j] > best) {
        best = to_keys[j];
        farthest = j;
      }
    }
    keys.push_back(farthest);
    for (uint32_t j = 0; j < n; ++j) to_keys[j] = std::min(to_keys[j], distance(similarity, n, farthest, j));
  }
  for (size_t a = 0; a < keys.size(); ++a) {
    for (size_t b = a + 1; b < keys.size(); ++b) pairs.add(keys[a], keys[b]);
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (std::find(keys.begin(), keys.end(), i) != keys.end()) continue;
    uint32_t nearest = keys.front();
    for (uint32_t key : keys) {
      if (distance(similarity, n, i, key) < distance(similarity, n, i, nearest)) nearest = key;
    }
    pairs.add(i, nearest);
  }
  // The K nearest by distance, the image itself (distance 0 to itself, usually first) among them.
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) {
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return distance(similarity, n, i, a) < distance(similarity, n, i, b);
    });
    for (uint32_t k = 0; k < std::min(spec.neighbours, n); ++k) pairs.add(i, order[k]);
  }
}

}  // namespace

std::string PairGraphSpec::to_string() const {
  const std::string suffix = cyclic ? "" : "-noncyclic";
  switch (kind) {
    case Kind::kComplete:
      return "complete";
    case Kind::kSlidingWindow:
      return "swin-" + std::to_string(window) + suffix;
    case Kind::kLogWindow:
      return "logwin-" + std::to_string(window) + suffix;
    case Kind::kOneReference:
      return "oneref-" + std::to_string(reference);
    case Kind::kRetrieval:
      return "retrieval-" + std::to_string(key_images) + "-" + std::to_string(neighbours);
  }
  return "complete";
}

Result<PairGraphSpec> parse_pair_graph(std::string_view text) {
  std::vector<std::string_view> parts = fields(text);
  PairGraphSpec spec;
  const std::string_view type = parts.front();
  const bool windowed = type == "swin" || type == "logwin";
  if (windowed && parts.back() == "noncyclic") {
    spec.cyclic = false;
    parts.pop_back();
  }
  auto wrong_count = [&] {
    return invalid_argument("pair graph '" + std::string(text) +
                            "': expected complete, swin-W[-noncyclic], logwin-W[-noncyclic], oneref-R or "
                            "retrieval-NA-K");
  };
  if (type == "complete") {
    if (parts.size() != 1) return wrong_count();
  } else if (windowed) {
    spec.kind = type == "swin" ? Kind::kSlidingWindow : Kind::kLogWindow;
    if (parts.size() > 2) return wrong_count();
    if (parts.size() == 2) {
      RECON_ASSIGN_OR_RETURN(spec.window, number(parts[1], "the window", 1));
    }
    if (spec.kind == Kind::kLogWindow && spec.window > 31) return invalid_argument("pair graph: logwin window over 31");
  } else if (type == "oneref") {
    spec.kind = Kind::kOneReference;
    if (parts.size() != 2) return wrong_count();
    RECON_ASSIGN_OR_RETURN(spec.reference, number(parts[1], "the reference image", 0));
  } else if (type == "retrieval") {
    spec.kind = Kind::kRetrieval;
    if (parts.size() != 3) return wrong_count();
    RECON_ASSIGN_OR_RETURN(spec.key_images, number(parts[1], "the key-image count", 1));
    RECON_ASSIGN_OR_RETURN(spec.neighbours, number(parts[2], "the neighbour count", 1));
  } else {
    return wrong_count();
  }
  return spec;
}

Result<std::vector<ImagePairIndex>> make_pair_graph(const PairGraphSpec& spec, uint32_t images,
                                                    std::span<const float> similarity) {
  const uint32_t n = images;
  if (n < 2) return invalid_argument("a pair graph needs at least 2 images, got " + std::to_string(n));
  PairSet pairs;
  switch (spec.kind) {
    case Kind::kComplete:
      for (uint32_t i = 0; i < n; ++i) {
        for (uint32_t j = 0; j < i; ++j) pairs.add(i, j);
      }
      break;
    case Kind::kSlidingWindow:
      for (uint32_t i = 0; i < n; ++i) {
        for (uint64_t j = 1; j <= spec.window; ++j) {
          if (spec.cyclic) {
            pairs.add(i, static_cast<uint32_t>((i + j) % n));
          } else if (i + j < n) {
            pairs.add(i, static_cast<uint32_t>(i + j));
          }
        }
      }
      break;
    case Kind::kLogWindow:
      for (uint32_t i = 0; i < n; ++i) {
        for (uint32_t w = 0; w < spec.window; ++w) {
          const uint64_t offset = uint64_t{1} << w;
          if (spec.cyclic) {
            pairs.add(i, static_cast<uint32_t>((i + offset) % n));
            pairs.add(i, static_cast<uint32_t>((i + n - offset % n) % n));
          } else {
            if (i + offset < n) pairs.add(i, static_cast<uint32_t>(i + offset));
            if (offset <= i) pairs.add(i, static_cast<uint32_t>(i - offset));
          }
        }
      }
      break;
    case Kind::kOneReference:
      if (spec.reference >= n) {
        return invalid_argument("pair graph oneref-" + std::to_string(spec.reference) + ": there are only " +
                                std::to_string(n) + " images");
      }
      for (uint32_t j = 0; j < n; ++j) pairs.add(spec.reference, j);
      break;
    case Kind::kRetrieval:
      if (similarity.size() != static_cast<size_t>(n) * n) {
        return invalid_argument("pair graph " + spec.to_string() + " needs a " + std::to_string(n) + "x" +
                                std::to_string(n) + " similarity matrix, got " + std::to_string(similarity.size()) +
                                " values");
      }
      if (spec.key_images > n) {
        return invalid_argument("pair graph " + spec.to_string() + ": " + std::to_string(spec.key_images) +
                                " key images of " + std::to_string(n));
      }
      add_retrieval(spec, n, similarity, pairs);
      break;
  }
  return pairs.sorted();
}

}  // namespace recon::daemon
