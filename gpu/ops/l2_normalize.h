// L2 normalisation over the last axis: out = x / max(‖x‖₂, eps). MASt3R's descriptor normalisation
// (desc_mode 'norm', spec §1) is x / ‖x‖ with no eps: pass eps = 0 (an all-zero row then gives NaN,
// as the reference does). eps > 0 gives torch.nn.functional.normalize. One workgroup per row; the
// sum of squares in fp32. Large tensors are split by rows as in layer_norm.h.
// Tolerance (tests/gpu/ops/l2_normalize_test.cpp): fp32 ≤ 1e-5, fp16 ≤ 2e-3, relative to max(|ref|, 1e-3).
#pragma once

#include "gpu/graph.h"

namespace recon::gpu::ops {

// x and out share shape and dtype (f32 or f16); eps ≥ 0.
Status l2_normalize(Graph& g, const Arg& x, const Arg& out, float eps = 0.0f);

}  // namespace recon::gpu::ops
