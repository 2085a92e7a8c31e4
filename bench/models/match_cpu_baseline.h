// The CPU baseline of recon_bench_match: the official fast reciprocal NN loop (spec §7) on host
// maps, brute force, multithreaded over the queries of each step. Straightforward on purpose: it
// is what a user would write without a GPU, not a tuned CPU matcher. Benchmark-only.
#pragma once

#include <cstdint>
#include <vector>

namespace recon::bench {

struct CpuFastMatches {
  std::vector<int32_t> idx_a, idx_b;  // merged (sorted by a, then b) and border-filtered
  std::vector<int32_t> active;        // seeds entering each step, then the unconverged
  int64_t queries = 0;                // nearest-neighbour searches done (the sum of active)
};

// a: [ha, wa, d], b: [hb, wb, d] row-major floats. threads = 0: hardware concurrency.
CpuFastMatches cpu_fast_reciprocal(const float* a, int64_t ha, int64_t wa, const float* b, int64_t hb, int64_t wb,
                                   int64_t d, int subsample, int max_iter, int border, int threads = 0);

}  // namespace recon::bench
