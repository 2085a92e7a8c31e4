// Softmax and log-softmax over the last axis, numerically stable (max-subtracted), any row length;
// fp32 arithmetic.
// One workgroup per row, or one subgroup per row for fp16 rows of a few words per lane
// (wide_access.h, softmax_schedule). (Attention does not use this op: its softmax is fused, see
// attention.h.)
// Large tensors are split by rows as in layer_norm.h.
// Tolerance (tests/gpu/ops/softmax_test.cpp): fp32 ≤ 1e-5, fp16 ≤ 2e-3, relative to max(|ref|, 1e-3).
#pragma once

#include "gpu/graph.h"

namespace recon::gpu::ops {

// x and out share shape and dtype (f32 or f16). A row of all −inf gives NaN, as in PyTorch.
Status softmax(Graph& g, const Arg& x, const Arg& out);
// log(softmax(x)) as x − max − log Σ exp(x − max): finite where softmax underflows to 0. Same rules.
Status log_softmax(Graph& g, const Arg& x, const Arg& out);

}  // namespace recon::gpu::ops
