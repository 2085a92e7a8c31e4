// nn.Linear with a fused epilogue, the model's main GEMM call:
//   out[..., N] = act(x[..., K] · weight[N,K]ᵀ + bias[N]) + residual[..., N]
// x and out are token-major with any number of leading dimensions (flattened into M rows);
// weight is in PyTorch's layout. One matmul_strided (matmul.h) with transpose_b, so the
// tensor-core path, tolerances and the splitting of oversized operands are matmul's: a weight
// beyond maxStorageBufferRange (the 6400×7168 fp32 head MLP weight, 175 MiB) is bound as row
// windows (slices of weight rows = output columns), one dispatch each; oversized x/out split by rows.
#pragma once

#include <optional>

#include "gpu/capabilities.h"
#include "gpu/graph.h"
#include "gpu/ops/matmul.h"

namespace recon::gpu::ops {

// x [..., K], weight [N, K], bias [N] or none, out [..., N] (same leading dims as x), residual
// (in `epilogue`) shaped like out and allowed to be out itself (in-place residual add).
// All f32 or all f16. `caps` (Runtime::caps()) selects the path.
Status linear(Graph& g, const Capabilities& caps, const Arg& x, const Arg& weight, const std::optional<Arg>& bias,
              const Arg& out, const Epilogue& epilogue = {}, GemmPath path = GemmPath::kAuto);

}  // namespace recon::gpu::ops
