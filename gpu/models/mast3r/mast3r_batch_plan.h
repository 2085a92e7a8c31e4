// How infer_batch splits its work, decided on the host before anything runs: the distinct images
// (views of one source count once), the encoder runs (per image size, chunks of consecutive images
// in first-use order, run in the order the pairs first need them), where each image's tokens land,
// and the order in which the pairs run (as soon as their tokens are ready). Pure bookkeeping: no
// GPU, no validation (the engine checks the input first).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gpu/models/mast3r/mast3r_encoder.h"

namespace recon::gpu {

// A pair of a batch: indices into its images; `first` is view 1, `second` view 2.
struct ImagePair {
  int32_t first = 0, second = 0;
  bool operator==(const ImagePair&) const = default;
};
// N images → the N−1 pairs (0,1), (1,2), …: a video or a capture sequence.
std::vector<ImagePair> consecutive_pairs(size_t image_count);

// An encoder output row: encoder run `step`, row `row` of its tokens.
struct TokenRow {
  int step = 0;
  int64_t row = 0;
  bool operator==(const TokenRow&) const = default;
};

struct BatchPlan {
  std::vector<int> images;                      // distinct images (an index into the call's list), first-use order
  std::vector<int> uses;                        // per distinct image: how many pair views read it
  std::vector<std::vector<int>> chunks;         // encoder runs in run order: distinct images of one size
  std::vector<TokenRow> row_of;                 // per distinct image: its encoder run and row
  std::vector<std::array<int, 2>> pair_images;  // per pair: its two distinct images
  std::vector<int> ready_after;                 // per pair: the last encoder run it reads
  std::vector<size_t> order;                    // pair indices in run order (by ready_after, stable)
};

// Encoder runs over images of these sizes: the images of each size in index order, cut into runs
// of up to `chunk`; the runs sorted by their first image.
std::vector<std::vector<int>> encoder_chunks(std::span<const ViewSize> sizes, size_t chunk);

// `sizes[i]` is image i's size; `source_of[i]` is the lowest index whose view has the same source as
// image i (i itself when none). Pairs' indices must be in range.
BatchPlan plan_batch(std::span<const ViewSize> sizes, std::span<const int> source_of, std::span<const ImagePair> pairs,
                     size_t chunk);

}  // namespace recon::gpu
