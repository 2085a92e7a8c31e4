// Pixel shuffle, PyTorch semantics: in [B, C·r², H, W] → out [B, C, H·r, W·r] with
// out[b, c, h·r + i, w·r + j] = in[b, c·r² + i·r + j, h, w]; and the token-major form MASt3R's
// local-feature head needs (spec §5.2): the MLP output [B, N = h·w, C·r²] goes straight to
// [B, C, h·r, w·r] (or channel-last [B, h·r, w·r, C]) without a separate transpose — output
// channel c at pixel (r·ty + dy, r·tx + dx) is MLP output index c·r² + dy·r + dx of token ty·w + tx.
//
// Both are permutations (a reshape to 6-D plus ops::permute), so they move bits and take any dtype
// (f32, f16, i32, u8), split large tensors along the batch axis like permute (layout.h), and are
// exact.
#pragma once

#include <cstdint>

#include "gpu/graph.h"

namespace recon::gpu::ops {

Status pixel_shuffle(Graph& g, const Arg& in, const Arg& out, int64_t r);

enum class ShuffleLayout { kChannelsFirst, kChannelsLast };
// in [B, h·w, C·r²]; h and w are taken from out: [B, C, h·r, w·r] (kChannelsFirst) or
// [B, h·r, w·r, C] (kChannelsLast).
Status pixel_shuffle_tokens(Graph& g, const Arg& in, const Arg& out, int64_t r,
                            ShuffleLayout layout = ShuffleLayout::kChannelsFirst);

}  // namespace recon::gpu::ops
