// The DUNE encoder of DUNE-MASt3R (naver/mast3r AsymmetricMASt3RWithDUNEBackbone over a naver/dune
// DINOv2-style ViT) as a Mast3rEncoder: ImageNet-normalised input (dune_preprocess.comp), patch
// embedding (14 px), [class, register tokens, patches + resampled position table], pre-norm blocks
// with plain softmax attention (no RoPE) and layer scale (folded into the weights at load), then the
// patch tokens of the last block through the wrapper's LayerNorm `norm`: what the MASt3R decoder
// and heads read. The class and register tokens take part in attention only. See docs/MAST3R.md.
#pragma once

#include <memory>

#include "gpu/models/mast3r/mast3r_encoder.h"

namespace recon::gpu {

// Unbuilt: Mast3rEncoder::build records it.
std::unique_ptr<Mast3rEncoder> make_dune_encoder(Runtime& rt, const Mast3rWeights& weights, int64_t batch,
                                                 ViewSize size);

}  // namespace recon::gpu
