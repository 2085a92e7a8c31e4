#include "bench/models/match_cpu_baseline.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace recon::bench {
namespace {

// argmax_j <q, db_j> over n pixels (fp32, ties to the lowest index).
int32_t nearest(const float* q, const float* db, int64_t n, int64_t d) {
  float best = -3.4e38f;
  int32_t bi = 0;
  for (int64_t j = 0; j < n; ++j) {
    const float* x = db + j * d;
    float s = 0;
    for (int64_t c = 0; c < d; ++c) s += q[c] * x[c];
    if (s > best) {
      best = s;
      bi = static_cast<int32_t>(j);
    }
  }
  return bi;
}

// out[i] = nearest(queries[pix[i]]) for the listed entries, split over threads.
void nearest_all(const std::vector<size_t>& entries, const std::vector<int32_t>& pix, const float* qmap,
                 const float* db, int64_t n, int64_t d, std::vector<int32_t>& out, int threads) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k = next++; k < entries.size(); k = next++) {
      const size_t i = entries[k];
      out[i] = nearest(qmap + static_cast<int64_t>(pix[i]) * d, db, n, d);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

bool inside(int32_t p, int64_t h, int64_t w, int border) {
  const int64_t x = p % w, y = p / w;
  return x >= border && x < w - border && y >= border && y < h - border;
}

}  // namespace

CpuFastMatches cpu_fast_reciprocal(const float* a, int64_t ha, int64_t wa, const float* b, int64_t hb, int64_t wb,
                                   int64_t d, int subsample, int max_iter, int border, int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int32_t> xy1;
  for (int64_t y = subsample / 2; y < ha; y += subsample) {
    for (int64_t x = subsample / 2; x < wa; x += subsample) xy1.push_back(static_cast<int32_t>(y * wa + x));
  }
  const size_t n = xy1.size();
  std::vector<int32_t> xy2(n, -1), new1(n), new2(n);
  std::vector<char> notyet(n, 1);
  CpuFastMatches r;
  r.active.assign(static_cast<size_t>(2 * max_iter + 1), 0);
  std::vector<size_t> entries;
  auto collect = [&] {
    entries.clear();
    for (size_t i = 0; i < n; ++i) {
      if (notyet[i]) entries.push_back(i);
    }
    r.queries += static_cast<int64_t>(entries.size());
    return static_cast<int32_t>(entries.size());
  };
  for (int it = 0; it < max_iter; ++it) {
    if ((r.active[static_cast<size_t>(2 * it)] = collect()) == 0) break;
    nearest_all(entries, xy1, a, b, hb * wb, d, new2, threads);
    for (size_t i : entries) {
      if (new2[i] == xy2[i]) notyet[i] = 0;  // xy2 == old_xy2: converged
      xy2[i] = new2[i];
    }
    r.active[static_cast<size_t>(2 * it + 1)] = collect();
    nearest_all(entries, xy2, b, a, ha * wa, d, new1, threads);
    for (size_t i : entries) {
      if (new1[i] == xy1[i]) notyet[i] = 0;  // the cycle came back to the same A pixel
      xy1[i] = new1[i];
    }
  }
  r.active.back() = static_cast<int32_t>(std::count(notyet.begin(), notyet.end(), 1));
  std::vector<std::pair<int32_t, int32_t>> pairs;
  for (size_t i = 0; i < n; ++i) {
    if (!notyet[i] && inside(xy1[i], ha, wa, border) && inside(xy2[i], hb, wb, border))
      pairs.emplace_back(xy1[i], xy2[i]);
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  for (auto [p, q] : pairs) {
    r.idx_a.push_back(p);
    r.idx_b.push_back(q);
  }
  return r;
}

}  // namespace recon::bench
