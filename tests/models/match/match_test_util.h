// Helpers of the matching tests: host descriptor maps, CPU float64 references of both matchers
// (written from the spec, independently of the GPU code), and near-tie checks for random data.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "gpu/models/match/match.h"

namespace recon::gpu::testing {

// A host descriptor map [h, w, d], row-major.
struct HostMap {
  int64_t h = 0, w = 0, d = 0;
  std::vector<float> v;
  int64_t n() const { return h * w; }
  const float* px(int64_t i) const { return v.data() + i * d; }
};

inline HostMap random_unit_map(int64_t h, int64_t w, int64_t d, uint32_t seed) {
  HostMap m{h, w, d, std::vector<float>(static_cast<size_t>(h * w * d))};
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist;
  for (int64_t i = 0; i < h * w; ++i) {
    double norm = 0;
    std::vector<double> x(static_cast<size_t>(d));
    for (auto& e : x) {
      e = dist(gen);
      norm += e * e;
    }
    norm = std::sqrt(norm);
    for (int64_t c = 0; c < d; ++c) m.v[static_cast<size_t>(i * d + c)] = static_cast<float>(x[c] / norm);
  }
  return m;
}

// Entries from {-1, -0.5, 0, 0.5, 1}: dot products are exact in fp32 and in float64, so equal
// scores are real ties and the tie rule is what decides.
inline HostMap quantised_map(int64_t h, int64_t w, int64_t d, uint32_t seed) {
  HostMap m{h, w, d, std::vector<float>(static_cast<size_t>(h * w * d))};
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(-2, 2);
  for (float& x : m.v) x = 0.5f * static_cast<float>(dist(gen));
  return m;
}

// A quantised map made of constant block × block regions: many pixels share a descriptor, so
// seeds of one region walk to the same pixels (what the fast matcher's de-duplication shares).
inline HostMap blocky_map(int64_t h, int64_t w, int64_t d, int64_t block, uint32_t seed) {
  const HostMap small = quantised_map((h + block - 1) / block, (w + block - 1) / block, d, seed);
  HostMap m{h, w, d, std::vector<float>(static_cast<size_t>(h * w * d))};
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      std::copy_n(small.px((y / block) * small.w + x / block), d, m.v.begin() + (y * w + x) * d);
    }
  }
  return m;
}

inline double dot(const float* a, const float* b, int64_t d) {
  double s = 0;
  for (int64_t c = 0; c < d; ++c) s += double(a[c]) * double(b[c]);
  return s;
}

// argmax over the database, ties to the lowest index. *gap (if given) is lowered to the margin
// between the best and the second-best score.
inline int32_t nn_ref(const float* q, const HostMap& db, double* gap = nullptr) {
  double best = -std::numeric_limits<double>::infinity(), second = best;
  int32_t bi = 0;
  for (int64_t j = 0; j < db.n(); ++j) {
    const double s = dot(q, db.px(j), db.d);
    if (s > best) {
      second = best;
      best = s;
      bi = static_cast<int32_t>(j);
    } else if (s > second) {
      second = s;
    }
  }
  if (gap) *gap = std::min(*gap, best - second);
  return bi;
}

// The K best database pixels of q: score descending, ties to the lower index.
inline std::vector<int32_t> topk_ref(const float* q, const HostMap& db, int k) {
  std::vector<std::pair<double, int32_t>> all;
  all.reserve(static_cast<size_t>(db.n()));
  for (int64_t j = 0; j < db.n(); ++j) all.emplace_back(dot(q, db.px(j), db.d), static_cast<int32_t>(j));
  std::partial_sort(all.begin(), all.begin() + k, all.end(), [](const auto& x, const auto& y) {
    return x.first > y.first || (x.first == y.first && x.second < y.second);
  });
  std::vector<int32_t> out;
  for (int i = 0; i < k; ++i) out.push_back(all[static_cast<size_t>(i)].second);
  return out;
}

// Smallest gap between the k-th and (k+1)-th best score of q (infinite if db has ≤ k pixels).
inline double gap_after(const float* q, const HostMap& db, int k) {
  if (db.n() <= k) return std::numeric_limits<double>::infinity();
  std::vector<double> s(static_cast<size_t>(db.n()));
  for (int64_t j = 0; j < db.n(); ++j) s[static_cast<size_t>(j)] = dot(q, db.px(j), db.d);
  std::nth_element(s.begin(), s.begin() + k, s.end(), std::greater<>());
  const double kth1 = s[static_cast<size_t>(k)];
  const double kth = *std::min_element(s.begin(), s.begin() + k);
  return kth - kth1;
}

inline bool inside(int32_t p, int64_t h, int64_t w, int border) {
  const int64_t x = p % w, y = p / w;
  return x >= border && x < w - border && y >= border && y < h - border;
}

struct RefMatches {
  std::vector<int32_t> idx_a, idx_b;
  std::vector<int32_t> active;    // fast matcher: active seeds per step, then the unconverged
  std::vector<int32_t> searches;  // fast matcher: distinct query pixels per step
  double min_gap = std::numeric_limits<double>::infinity();  // smallest top-1/top-2 margin queried
};

// The official loop (spec §7), literally: notyet masks, old_xy copies, merge, border filter.
inline RefMatches fast_ref(const HostMap& a, const HostMap& b, int subsample, int max_iter, int border) {
  std::vector<int32_t> xy1 = match_seed_grid(a.h, a.w, subsample);
  const size_t n = xy1.size();
  std::vector<int32_t> xy2(n, -1), old1 = xy1, old2 = xy2;
  std::vector<char> notyet(n, 1);
  RefMatches r;
  r.active.assign(static_cast<size_t>(2 * max_iter + 1), 0);
  r.searches.assign(static_cast<size_t>(2 * max_iter), 0);
  auto count = [&] { return static_cast<int32_t>(std::count(notyet.begin(), notyet.end(), 1)); };
  auto distinct = [&](const std::vector<int32_t>& xy) {
    std::vector<int32_t> q;
    for (size_t i = 0; i < n; ++i) {
      if (notyet[i]) q.push_back(xy[i]);
    }
    std::sort(q.begin(), q.end());
    return static_cast<int32_t>(std::unique(q.begin(), q.end()) - q.begin());
  };
  int niter = 0;
  while (count() > 0) {
    r.active[static_cast<size_t>(2 * niter)] = count();
    r.searches[static_cast<size_t>(2 * niter)] = distinct(xy1);
    for (size_t i = 0; i < n; ++i) {
      if (notyet[i]) xy2[i] = nn_ref(a.px(xy1[i]), b, &r.min_gap);
    }
    for (size_t i = 0; i < n; ++i) notyet[i] = notyet[i] && old2[i] != xy2[i];
    r.active[static_cast<size_t>(2 * niter + 1)] = count();
    r.searches[static_cast<size_t>(2 * niter + 1)] = distinct(xy2);
    for (size_t i = 0; i < n; ++i) {
      if (notyet[i]) xy1[i] = nn_ref(b.px(xy2[i]), a, &r.min_gap);
    }
    for (size_t i = 0; i < n; ++i) notyet[i] = notyet[i] && old1[i] != xy1[i];
    if (++niter >= max_iter) break;
    old2 = xy2;
    old1 = xy1;
  }
  r.active.back() = count();
  std::vector<std::pair<int32_t, int32_t>> pairs;
  for (size_t i = 0; i < n; ++i) {
    if (!notyet[i]) pairs.emplace_back(xy1[i], xy2[i]);
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  for (auto [p, q] : pairs) {
    if (inside(p, a.h, a.w, border) && inside(q, b.h, b.w, border)) {
      r.idx_a.push_back(p);
      r.idx_b.push_back(q);
    }
  }
  return r;
}

}  // namespace recon::gpu::testing
