// The retrieval head's weights on the device and their loading from safetensors (official key
// names, see docs/RETRIEVAL.md). Internal to gpu/models/retrieval/.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "gpu/models/retrieval/retrieval.h"

namespace recon::gpu {

// m is kept as an unevaluated sum of two f32 tensors (m ≈ mean_hi + mean_lo to ~2^-48 relative):
// the whitening scales low-variance directions up by 1/sqrt(eigenvalue), so rounding m to f32
// (an error of 2^-24·|m|, large next to x − m for the encoder's offset features) would be amplified
// with them. (x − mean_hi) − mean_lo keeps the centring accurate to one rounding of |x − m|.
struct WhitenerWeights {
  Tensor mean_hi, mean_lo;  // f32 [1, D]
  Tensor projection;        // f32 [D, D] (p: y = (x − m)·p, p on the right), rounded from float64
};

// projector.<3i> Linear, projector.<3i+1> LayerNorm (absent on the last layer), then GELU.
struct ProjectorLayer {
  Tensor weight, bias;            // f32 [out, in], [out]
  Tensor norm_weight, norm_bias;  // f32 [out]; undefined for the last Linear
};

struct RetrievalWeights {
  std::optional<WhitenerWeights> prewhiten, postwhiten;
  std::vector<ProjectorLayer> projector;
};

// The config (metadata "retrieval.config", or inferred from the tensor names when absent: residual
// off, nfeat 300 as the official default) and the device weights it names.
struct LoadedRetrieval {
  RetrievalConfig config;
  std::unique_ptr<RetrievalWeights> weights;
};
Result<LoadedRetrieval> load_retrieval_weights(Runtime& rt, const SafetensorsFile& file);

}  // namespace recon::gpu
